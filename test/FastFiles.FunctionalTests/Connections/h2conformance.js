// HTTP/2 framing edge cases against one server, printed as deterministic JSON (no timings), so a test can
// compare the outcomes with the TLS output stage on and off. Usage: node h2conformance.js <base-url> <ca.pem> <path>...
'use strict';
const http2 = require('node:http2');
const crypto = require('node:crypto');
const fs = require('node:fs');

const [base, caPath, ...paths] = process.argv.slice(2);
const ca = fs.readFileSync(caPath);

function connect(settings) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base, { ca, settings: settings || {} });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

function get(session, path, headers) {
  return new Promise((resolve) => {
    const req = session.request({ ':path': path, ...(headers || {}) });
    const hash = crypto.createHash('sha256');
    let length = 0;
    let status = 0;
    let responseHeaders = {};
    req.on('response', (h) => { status = h[':status']; responseHeaders = h; });
    req.on('data', (chunk) => { length += chunk.length; hash.update(chunk); });
    req.on('end', () => resolve({ status, length, sha256: hash.digest('hex'), headers: responseHeaders }));
    req.on('error', (e) => resolve({ error: e.code || String(e) }));
    req.end();
  });
}

async function manyStreams() {
  const session = await connect();
  const jobs = [];
  for (let round = 0; round < 20; round++) {
    for (const p of paths) {
      jobs.push(get(session, p).then((r) => ({ path: p, status: r.status, length: r.length, sha256: r.sha256, error: r.error })));
    }
  }
  const results = await Promise.all(jobs);
  session.close();
  // One line per path; every repetition must agree.
  const byPath = {};
  for (const r of results) {
    const key = JSON.stringify({ status: r.status, length: r.length, sha256: r.sha256, error: r.error });
    (byPath[r.path] = byPath[r.path] || new Set()).add(key);
  }
  return Object.fromEntries(Object.entries(byPath).map(([p, s]) => [p, [...s].map((k) => JSON.parse(k))]));
}

async function rstStream() {
  const session = await connect();
  const outcome = await new Promise((resolve) => {
    const req = session.request({ ':path': '/stream/67108864' });
    let sawData = false;
    req.on('data', () => {
      if (!sawData) { sawData = true; req.close(http2.constants.NGHTTP2_CANCEL); }
    });
    req.on('close', () => resolve({ sawData, rstCode: req.rstCode }));
    req.on('error', () => {});
    req.end();
  });
  const after = await get(session, paths[paths.length - 1]);
  session.close();
  return { ...outcome, followUp: { status: after.status, length: after.length, sha256: after.sha256 } };
}

async function largeHeaders() {
  const session = await connect();
  // 20000 bytes of request header: more than one 16 KiB frame, so HEADERS + CONTINUATION.
  const echo = await new Promise((resolve) => {
    const req = session.request({ ':path': '/echo-header', 'x-big': 'q'.repeat(20000) });
    let body = '';
    let status = 0;
    req.setEncoding('utf8');
    req.on('response', (h) => { status = h[':status']; });
    req.on('data', (c) => { body += c; });
    req.on('end', () => resolve({ status, body }));
    req.on('error', (e) => resolve({ error: e.code }));
    req.end();
  });
  const big = await get(session, '/bigheaders/30000');
  session.close();
  return { requestHeaderEchoed: echo, responseHeaderLength: (big.headers['x-big'] || '').length, responseStatus: big.status };
}

async function ping() {
  const session = await connect();
  const payload = Buffer.from('fastfile');
  const echoed = await new Promise((resolve) => {
    session.ping(payload, (err, _duration, p) => resolve(err ? String(err) : p.toString()));
  });
  session.close();
  return { echoed };
}

async function settingsChange() {
  const session = await connect();
  const acked = await new Promise((resolve) => {
    session.settings({ initialWindowSize: 100000, maxFrameSize: 32768, maxConcurrentStreams: 50 }, (err) => resolve(!err));
  });
  const r = await get(session, paths[paths.length - 1]);
  session.close();
  return { acked, status: r.status, length: r.length, sha256: r.sha256 };
}

async function smallWindows() {
  // A 1000-byte stream window: the server must wait for WINDOW_UPDATEs, which node sends as it consumes.
  const session = await connect({ initialWindowSize: 1000 });
  const results = await Promise.all([get(session, paths[paths.length - 1]), get(session, paths[paths.length - 2])]);
  session.close();
  return results.map((r) => ({ status: r.status, length: r.length, sha256: r.sha256 }));
}

async function clientGoAway() {
  const session = await connect();
  const inFlight = get(session, paths[paths.length - 1]);
  const closed = new Promise((resolve) => session.on('close', () => resolve(true)));
  // A client GOAWAY limits server-initiated streams only; the in-flight response must still complete.
  session.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
  const r = await inFlight;
  session.close();
  return { status: r.status, length: r.length, sha256: r.sha256, sessionClosed: await closed };
}

(async () => {
  const out = {};
  for (const [name, fn] of Object.entries({ manyStreams, rstStream, largeHeaders, ping, settingsChange, smallWindows, clientGoAway })) {
    try { out[name] = await fn(); } catch (e) { out[name] = { failed: e.code || String(e) }; }
  }
  process.stdout.write(JSON.stringify(out, null, 1));
})();
