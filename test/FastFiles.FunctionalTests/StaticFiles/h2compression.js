// Node's http2 client against dynamic compression: for each base URL (h2 over TLS, h2c), each coding (br, gzip):
// the whole variant and a two-part range of it. Prints one JSON document; the C# test decodes and checks the bytes.
// Usage: node h2compression.js <ca.pem> <path> <base URL>...
'use strict';
const http2 = require('http2');
const fs = require('fs');
const zlib = require('zlib');
const crypto = require('crypto');

const [, , caPath, path, ...bases] = process.argv;
const ca = fs.readFileSync(caPath);

function connect(base) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base, { ca });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

function request(session, headers) {
  return new Promise((resolve, reject) => {
    const req = session.request(headers);
    const chunks = [];
    let head = {};
    req.on('response', (h) => { head = h; });
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve({ head, body: Buffer.concat(chunks) }));
    req.on('error', reject);
    req.end();
  });
}

async function main() {
  const results = [];
  for (const base of bases) {
    const session = await connect(base);
    for (const coding of ['br', 'gzip']) {
      const whole = await request(session, { ':path': path, 'accept-encoding': coding });
      const decoded = coding === 'br' ? zlib.brotliDecompressSync(whole.body) : zlib.gunzipSync(whole.body);
      const ranges = await request(session, { ':path': path, 'accept-encoding': coding, range: 'bytes=1000-1199' });
      results.push({
        base,
        coding,
        status: whole.head[':status'],
        encoding: whole.head['content-encoding'] || '',
        vary: whole.head['vary'] || '',
        etag: whole.head['etag'] || '',
        length: Number(whole.head['content-length']),
        decodedSha256: crypto.createHash('sha256').update(decoded).digest('hex'),
        encoded: whole.body.toString('base64'),
        rangeStatus: ranges.head[':status'],
        rangeEncoding: ranges.head['content-encoding'] || '',
        rangeType: ranges.head['content-type'] || '',
        rangeBody: ranges.body.toString('base64'),
      });
    }
    session.close();
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err));
  process.exit(1);
});
