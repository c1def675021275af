// A pipelining HTTP/1.1 client in its own process, so the server's allocation counter sees only the server:
//   node lane-client.js PORT REQUEST_BASE64 BATCH_SIZE RESPONSE_LENGTH
// Each line on stdin ("N") sends N batches of BATCH_SIZE copies of the request, one write per batch, waits for
// BATCH_SIZE responses of RESPONSE_LENGTH bytes each, then prints "done".
'use strict';
const net = require('net');
const readline = require('readline');

const [port, requestBase64, batchSize, responseLength] = process.argv.slice(2);
const batch = Buffer.concat(Array(Number(batchSize)).fill(Buffer.from(requestBase64, 'base64')));
const expected = Number(batchSize) * Number(responseLength);

const socket = net.connect(Number(port), '127.0.0.1');
socket.setNoDelay(true);
let received = 0;
let waiting = null;
socket.on('data', chunk => {
  received += chunk.length;
  if (waiting && received >= expected) {
    received -= expected;
    const done = waiting;
    waiting = null;
    done();
  }
});
socket.on('error', error => { console.error(error.message); process.exit(2); });
socket.on('close', () => { if (waiting) { console.error('closed by the server'); process.exit(3); } });

function oneBatch() {
  return new Promise(resolve => {
    waiting = resolve;
    socket.write(batch);
  });
}

socket.on('connect', () => {
  const lines = readline.createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on('line', line => {
    queue = queue.then(async () => {
      for (let i = 0; i < Number(line); i++) {
        await oneBatch();
      }
      process.stdout.write('done\n');
    });
  });
  lines.on('close', () => queue.then(() => socket.end()));
  process.stdout.write('ready\n');
});
