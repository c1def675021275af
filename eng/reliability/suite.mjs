// The fault and abuse cases, run against one server (the FastFiles sample as shipped, or stock UseStaticFiles).
// Usage: node suite.mjs --name N --http http://127.0.0.1:P --https https://127.0.0.1:P --pid PID --root DIR
//                       --mode short|long --cases a,b,c --out results.json
// Every case is bounded in time and prints one figure object; the driver (eng/reliability.sh) runs both servers.
import fs from 'node:fs';
import http2 from 'node:http2';
import tls from 'node:tls';
import { proc, sleep, until, RawConnection, rawExchange } from './common.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (v.startsWith('--') ? [...a, [v.slice(2), all[i + 1]]] : a), []));
const long = args.mode === 'long', ci = args.mode === 'ci';
const http = new URL(args.http), https = new URL(args.https), h2c = args.h2c ? new URL(args.h2c) : null;
const pid = Number(args.pid);
const H = http.hostname, P = Number(http.port);
const results = fs.existsSync(args.out) ? JSON.parse(fs.readFileSync(args.out, 'utf8')) : {};
results[args.name] ??= {};

function h2session(url = args.https) {
  return http2.connect(url, { rejectUnauthorized: false });
}

/** The server's in-process figures, as the startup hook last wrote them (see MetricsHook): {} when there are none. */
function metrics() {
  try { return JSON.parse(fs.readFileSync(args.metrics, 'utf8')); } catch { return {}; }
}

/** The figures that must come back to their idle values once clients are gone. */
function pools() {
  const m = metrics();
  const pick = name => m[name] ?? null;
  return {
    connections: pick('kestrel.active_connections'), cacheEntries: pick('fastfiles.cache.entries'), cacheOpenFiles: pick('fastfiles.cache.open_files'),
    sendPathBlocks: pick('fastfiles.send_path.blocks'), tlsStageBufferedBytes: pick('fastfiles.tls_stage.buffered'),
    // In use (rented and not returned): allocated, less what was evicted and what sits in the pool.
    kestrelPoolInUseBytes: m['aspnetcore.memory_pool.allocated'] != null && m['aspnetcore.memory_pool.pooled'] != null
      ? m['aspnetcore.memory_pool.allocated'] - (m['aspnetcore.memory_pool.evicted'] ?? 0) - m['aspnetcore.memory_pool.pooled'] : null,
    kestrelPoolPooledBytes: pick('aspnetcore.memory_pool.pooled'),
  };
}

/** One HTTP/2 frame: 9-byte header (RFC 9113 4.1) and payload. */
function rawFrame(type, flags, stream, payload) {
  const b = Buffer.alloc(9 + payload.length); b.writeUIntBE(payload.length, 0, 3); b[3] = type; b[4] = flags; b.writeUInt32BE(stream, 5); payload.copy(b, 9); return b;
}

function h2get(session, path, headers = {}) {
  return new Promise(resolve => {
    const req = session.request({ ':path': path, ...headers });
    let status = 0, bytes = 0;
    req.on('response', h => { status = h[':status']; });
    req.on('data', d => { bytes += d.length; });
    req.on('end', () => resolve({ status, bytes }));
    req.on('error', () => resolve({ status: -1, bytes }));
    req.end();
  });
}

/** Fast clients hammering small and 1 MiB files over keep-alive while a case runs. */
function fastClients(untilDone, n = 4) {
  const figure = { ok: 0, failed: 0 };
  const one = async () => {
    while (!untilDone()) {
      const c = new RawConnection(H, P);
      try {
        await c.connect();
        for (let i = 0; i < 50 && !untilDone(); i++) {
          const r = await c.request(i % 5 === 0 ? '/1mib.bin' : '/small.txt', { timeoutMs: 10000 });
          if (r.status === 200 && r.complete) figure.ok++; else { figure.failed++; break; }
        }
      } catch { figure.failed++; }
      c.destroy();
    }
  };
  return { figure, done: Promise.all(Array.from({ length: n }, one)) };
}

const cases = {
  // Tens of connections reading 100 MiB at ~16 KiB/s; fast clients alongside.
  async 'slow-readers'() {
    const n = long ? 40 : 20, seconds = long ? 30 : 12, rate = 16 * 1024;
    await sleep(1000);
    const before = proc(pid);
    const conns = [];
    for (let i = 0; i < n; i++) {
      const c = new RawConnection(H, P);
      await c.connect();
      c.socket.pause();
      c.write('GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n');
      conns.push({ c, read: 0 });
    }
    // Pull what arrived, up to each tick's share (sockets stay paused in between).
    const tick = () => {
      for (const x of conns) {
        let budget = rate / 8, chunk;
        while (budget > 0 && (chunk = x.c.socket.read(Math.min(budget, 2048))) !== null) { x.read += chunk.length; budget -= chunk.length; }
      }
    };
    // Phase 1, slow readers alone: what each one costs the server (resident memory, sampled every tick), and the response
    // bytes it holds in user space: Kestrel's memory pool blocks rented and not returned (pipes) plus the send path's
    // blocks (16 KiB each), from the in-process metrics (written twice a second). Socket buffers are the kernel's.
    let slowPeak = before.rssMiB;
    const buffered = () => {
      const p = pools();
      return p.kestrelPoolInUseBytes == null ? null : p.kestrelPoolInUseBytes + (p.sendPathBlocks ?? 0) * 16 * 1024;
    };
    const bufferedBefore = buffered();
    let bufferedPeak = bufferedBefore;
    const phase1 = Date.now() + 4000;
    while (Date.now() < phase1) {
      tick(); slowPeak = Math.max(slowPeak, proc(pid).rssMiB);
      const b = buffered(); if (b != null && bufferedPeak != null) bufferedPeak = Math.max(bufferedPeak, b);
      await sleep(125);
    }
    // Phase 2, fast clients alongside: they must not be starved.
    const stop = Date.now() + seconds * 1000;
    const fast = fastClients(() => Date.now() > stop);
    let peak = slowPeak;
    while (Date.now() < stop) { tick(); peak = Math.max(peak, proc(pid).rssMiB); await sleep(125); }
    const alive = conns.filter(x => !x.c.closed && !x.c.socket.destroyed).length;
    const during = proc(pid);
    conns.forEach(x => x.c.destroy());
    await fast.done;
    return {
      connections: n, seconds: seconds + 4, stillOpen: alive, minKiBRead: Math.round(Math.min(...conns.map(x => x.read)) / 1024),
      rssBeforeMiB: before.rssMiB, rssPeakSlowOnlyMiB: slowPeak, rssGrowthPerSlowConnKiB: Math.round((slowPeak - before.rssMiB) * 1024 / n),
      bufferedBeforeKiB: bufferedBefore == null ? null : Math.round(bufferedBefore / 1024), bufferedPeakKiB: bufferedPeak == null ? null : Math.round(bufferedPeak / 1024),
      bufferedPerSlowConnKiB: bufferedPeak == null ? null : Math.round((bufferedPeak - bufferedBefore) / 1024 / n),
      rssPeakWithFastMiB: peak, fastOk: fast.figure.ok, fastFailed: fast.figure.failed, fdsDuring: during.fds,
    };
  },

  // Hundreds of connections dribbling header bytes; fast clients must keep succeeding.
  async slowloris() {
    const n = long ? 500 : 200, seconds = long ? 40 : 34;
    const stop = Date.now() + seconds * 1000;
    const fast = fastClients(() => Date.now() > stop);
    const slow = [];
    for (let i = 0; i < n; i++) {
      const c = new RawConnection(H, P);
      try { await c.connect(); c.write('GET /small.txt HTTP/1.1\r\nHost: x\r\n'); slow.push(c); } catch { }
    }
    while (Date.now() < stop) {
      for (const c of slow) if (!c.closed) c.write('X');
      await sleep(1000);
    }
    const closedByServer = slow.filter(c => c.closed).length;
    slow.forEach(c => c.destroy());
    await fast.done;
    return { slowConnections: slow.length, seconds, closedByServer, fastOk: fast.figure.ok, fastFailed: fast.figure.failed, fastSuccessPercent: Math.round(1000 * fast.figure.ok / Math.max(1, fast.figure.ok + fast.figure.failed)) / 10 };
  },

  // Clients resetting at random points of 1 MiB and 100 MiB bodies, over h1, h2c and h2+TLS: descriptors, pool blocks
  // and cache entries return to their values before the case (the files are cached once first).
  async reset() {
    const count = long ? 3000 : ci ? 120 : 300;
    const done = { h1: 0, h2c: 0, h2Tls: 0 };
    const round = n => Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = w; i < n; i += 8) {
        const path = i % 4 === 0 ? '/big.bin' : '/1mib.bin';
        const cut = Math.floor(Math.random() * (path === '/big.bin' ? 4 << 20 : 1 << 20));
        const kind = i % 3;
        if (kind === 0 || (kind === 1 && !h2c)) {
          const c = new RawConnection(H, P);
          try {
            await c.connect();
            c.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
            await until(() => c.buf.length >= cut || c.closed, 10000, 5);
          } catch { }
          c.reset(); done.h1++;
        } else {
          const s = h2session(kind === 1 ? args.h2c : args.https);
          s.on('error', () => { });
          await new Promise(resolve => {
            const req = s.request({ ':path': path });
            let got = 0;
            req.on('data', d => { got += d.length; if (got >= cut) { req.close(http2.constants.NGHTTP2_CANCEL); } });
            req.on('close', resolve); req.on('error', resolve); req.end();
            setTimeout(resolve, 10000);
          });
          // A third of the sessions end with a TCP reset under the cancelled stream, the rest with GOAWAY.
          if (i % 9 < 3) { try { s.socket.resetAndDestroy(); } catch { s.destroy(); } } else s.close();
          if (kind === 1) done.h2c++; else done.h2Tls++;
        }
      }
    }));
    // Warm-up: every file over every transport once, so the cache holds what the case will use before the baseline.
    await round(24);
    await sleep(1500);
    const base = proc(pid), basePools = pools();
    Object.keys(done).forEach(k => { done[k] = 0; });
    await round(count);
    const same = (a, b) => Object.keys(a).every(k => a[k] === null || k === 'kestrelPoolPooledBytes' || k === 'kestrelPoolInUseBytes' || a[k] === b[k]);
    // Settled: connections, cache entries, open files and send path blocks back to their values, and no descriptor more
    // than before beyond a few for threads the runtime started meanwhile (stock grows the same way).
    const settled = await until(() => proc(pid).fds <= base.fds + 8 && same(basePools, pools()), 20000, 250);
    const after = proc(pid);
    return {
      resets: count, ...done, settled, fdsBefore: base.fds, fdsAfter: after.fds, rssBeforeMiB: base.rssMiB, rssAfterMiB: after.rssMiB,
      poolsBefore: basePools, poolsAfter: pools(),
    };
  },

  // Files replaced, truncated, rewritten and deleted while clients fetch them: every 200/206 is one version.
  async churn() {
    const seconds = long ? 60 : ci ? 5 : 10;
    const dir = args.root;
    const sizes = v => 300 * 1024 + v * 997;
    const write = (p, v) => fs.writeFileSync(p, Buffer.alloc(sizes(v), v % 251));
    let version = 1;
    write(`${dir}/churn.bin`, version);
    const stop = Date.now() + seconds * 1000;
    // Half the clients on plaintext (the sample's zero-copy send path: sendfile), half over TLS (bodies copied).
    const blank = () => ({ ok200: 0, ok206: 0, head: 0, notFound: 0, torn: 0, mismatched: 0, cutShortClosed: 0, cutShortOpen: 0, other: {} });
    const byTransport = { plaintext: blank(), tls: blank() };
    const mutator = (async () => {
      while (Date.now() < stop) {
        version++;
        const op = version % 4;
        const p = `${dir}/churn.bin`;
        try {
          if (op === 0) { write(`${dir}/churn.tmp`, version); fs.renameSync(`${dir}/churn.tmp`, p); }
          else if (op === 1) { fs.truncateSync(p, 1000 + version); }
          else if (op === 2) { const fd = fs.openSync(p, 'r+'); fs.writeSync(fd, Buffer.alloc(sizes(version), version % 251), 0, sizes(version), 0); fs.closeSync(fd); }
          else { fs.rmSync(p, { force: true }); await sleep(5); write(p, version); }
        } catch { }
        await sleep(15);
      }
    })();
    const check = (r, expectLength) => {
      const b = r.body;
      if (!r.complete) { return 'cut'; }
      if (b.length !== expectLength) return 'mismatched';
      for (let i = 1; i < b.length; i++) if (b[i] !== b[0]) return 'torn';
      return 'ok';
    };
    const clients = Array.from({ length: 4 }, async (_, w) => {
      const secure = w % 2 === 1;
      const figure = byTransport[secure ? 'tls' : 'plaintext'];
      while (Date.now() < stop) {
        const c = secure ? new RawConnection(https.hostname, Number(https.port), { secure }) : new RawConnection(H, P);
        try { await c.connect(); } catch { continue; }
        for (let i = 0; i < 20 && Date.now() < stop && !c.closed; i++) {
          const kind = (i + w) % 3;
          const r = kind === 1 ? await c.request('/churn.bin', { method: 'HEAD' })
            : kind === 2 ? await c.request('/churn.bin', { headers: 'Range: bytes=100-50000\r\n' })
              : await c.request('/churn.bin');
          if (r.status === 0) break;
          if (r.status === 404) { figure.notFound++; continue; }
          if (kind === 1) { figure.head++; continue; }
          if (r.status !== 200 && r.status !== 206) { figure.other[r.status] = (figure.other[r.status] ?? 0) + 1; continue; }
          const verdict = check(r, Number(r.headers['content-length']));
          if (verdict === 'cut') {
            // A cut-short body must end its connection.
            await until(() => c.closed, 5000, 20);
            if (c.closed) figure.cutShortClosed++; else figure.cutShortOpen++;
            break;
          }
          if (verdict === 'ok') { if (r.status === 200) figure.ok200++; else figure.ok206++; }
          else figure[verdict]++;
        }
        c.destroy();
      }
    });
    await Promise.all([mutator, ...clients]);
    const total = k => byTransport.plaintext[k] + byTransport.tls[k];
    return { seconds, mutations: version - 1, torn: total('torn'), mismatched: total('mismatched'), cutShortOpen: total('cutShortOpen'), ...byTransport };
  },

  // Hostile HTTP/1.1 input: never a 5xx, never a byte from outside the root.
  async hostile() {
    const secret = 'SECRET-OUTSIDE-ROOT-3c9e';
    const targets = [
      '/../secret.txt', '/%2e%2e/secret.txt', '/%252e%252e/secret.txt', '/..%2fsecret.txt', '/..%5csecret.txt', '/..\\secret.txt',
      '/%00', '/small.txt%00.html', '/link-out.txt', '/download/link-out.txt', '/download/../secret.txt', '/download/%2e%2e/secret.txt',
      '/download/..%2fsecret.txt', `http://x/../secret.txt`, '/' + 'a'.repeat(100000), '/' + '../'.repeat(3000) + 'secret.txt', '*',
    ];
    const requests = targets.map(t => `GET ${t} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const manyRanges = 'bytes=' + Array.from({ length: 5000 }, (_, i) => `${i * 10}-${i * 10 + 5}`).join(',');
    const manyCodings = Array.from({ length: 5000 }, (_, i) => `x${i};q=0.${i % 10}`).join(', ');
    for (const h of [
      `Range: ${manyRanges}`, `Accept-Encoding: ${manyCodings}`, 'If-None-Match: "\0"', 'If-Match: ,,,,W/', 'If-Modified-Since: 99 Foo 99999',
      'If-Range: garbage"', 'Range: bytes=-0', 'Range: bytes=999999999999999999999-', `X-Big: ${'b'.repeat(200000)}`, 'Range: bytes=0-0,-1,' + '1-,'.repeat(2000),
    ]) requests.push(`GET /1mib.bin HTTP/1.1\r\nHost: x\r\n${h}\r\nConnection: close\r\n\r\n`);
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /secret.txt HTTP/1.1\r\nHost: x\r\n\r\n');
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!');
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n');
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n');
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\n Folded: y\r\n\r\n');
    requests.push('GET /small.txt HTTP/1.1\nHost: x\n\n');
    requests.push('GET /sm\0all.txt HTTP/1.1\r\nHost: x\r\n\r\n');
    requests.push('GET /small.txt HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n');
    requests.push('GET /small.txt HTTP/1.1\r\n' + 'X: y\r\n'.repeat(5000) + '\r\n');
    const figure = { requests: requests.length, by: {}, fiveXX: 0, leaked: 0, noAnswer: 0, noAnswerRequests: [] };
    for (const r of requests) {
      const { statuses, text, timedOut } = await rawExchange(H, P, r, 10000);
      if (statuses.length === 0 || timedOut) figure.noAnswerRequests.push(r.slice(0, 60).replace(/\r\n/g, '|'));
      if (statuses.length === 0) figure.noAnswer++;
      for (const s of statuses) { const k = `${Math.floor(s / 100)}xx`; figure.by[k] = (figure.by[k] ?? 0) + 1; if (s >= 500) figure.fiveXX++; }
      if (text.includes(secret)) figure.leaked++;
      if (timedOut) figure.noAnswer++;
    }
    figure.alive = proc(pid).alive;
    return figure;
  },

  // RLIMIT_NOFILE low (the driver starts this server under prlimit): idle connections take every descriptor, then a
  // file that needs opening is requested; the server must answer (never a cacheable 404), survive, and recover.
  async exhaustion() {
    const limit = Number(args.nofile);
    const conns = [];
    let stuck = 0;
    while (proc(pid).fds < limit && conns.length < limit) {
      const c = new RawConnection(H, P);
      try { await c.connect(); } catch { break; }
      conns.push(c);
      const r = await c.request('/small.txt', { timeoutMs: 3000 });
      if (r.status !== 200) { stuck++; if (stuck > 3) break; }
    }
    const fdsAtLimit = proc(pid).fds;
    const live = conns.filter(c => !c.closed);
    const statuses = {};
    for (let i = 0; i < 5 && live.length > 0; i++) {
      const r = await live[0].request('/1mib.bin', { timeoutMs: 10000 });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 0) { live.shift(); }
    }
    const retryAfter = live[0] ? (await live[0].request('/1mib.bin', { timeoutMs: 10000 })).headers['retry-after'] ?? null : null;
    const cached = live[0] ? (await live[0].request('/small.txt', { timeoutMs: 10000 })).status : 0;
    // Load drops.
    conns.slice(1, Math.floor(conns.length / 2)).forEach(c => c.destroy());
    let recovered = 0, recoverSeconds = -1;
    const t0 = Date.now();
    await until(async () => {
      const c = new RawConnection(H, P);
      try { await c.connect(2000); const r = await c.request('/1mib.bin', { timeoutMs: 5000 }); c.destroy(); if (r.status === 200 && r.complete) { recovered = 1; return true; } } catch { c.destroy(); }
      return !proc(pid).alive;
    }, 30000, 200);
    if (recovered) recoverSeconds = Math.round((Date.now() - t0) / 100) / 10;
    conns.forEach(c => c.destroy());
    await sleep(1000);
    const log = args.log && fs.existsSync(args.log) ? fs.readFileSync(args.log, 'utf8') : '';
    return {
      nofile: limit, connectionsOpened: conns.length, fdsAtLimit, statusesWhileExhausted: statuses, retryAfter, cachedFileStatus: cached,
      recovered: !!recovered, recoverSeconds, alive: proc(pid).alive,
      warnings: (log.match(/Out of file descriptors/g) ?? []).length, reserveWarnings: (log.match(/kept free for files and thread starts/g) ?? []).length, crashLine: (log.match(/^(Out of memory\.|Unhandled exception.*)$/m) ?? [null])[0],
    };
  },

  // Graceful shutdown under load: SIGTERM while keep-alive clients fetch 1 MiB bodies back to back. Every response
  // either completes or its connection closes; no error logged. Run last: it stops the server.
  async shutdown() {
    const figure = { completed: 0, cutAndClosed: 0, cutButOpen: 0, refusedAfterStop: 0 };
    let stopping = false;
    const clients = Array.from({ length: long ? 2000 : 300 }, async () => {
      const c = new RawConnection(H, P);
      try { await c.connect(); } catch { figure.refusedAfterStop++; return; }
      while (!c.closed) {
        const r = await c.request(Math.random() < 0.5 ? '/1mib.bin' : '/small.txt', { timeoutMs: 20000 });
        if (r.status === 0) break;
        if (r.complete) { figure.completed++; continue; }
        await until(() => c.closed, 5000, 20);
        if (c.closed) figure.cutAndClosed++; else figure.cutButOpen++;
        break;
      }
      c.destroy();
    });
    await sleep(2000);
    stopping = true;
    const inFlightAtStop = figure.completed;
    const logAtStop = args.log && fs.existsSync(args.log) ? fs.statSync(args.log).size : 0;
    process.kill(pid, 'SIGTERM');
    await Promise.all(clients);
    await until(() => !proc(pid).alive, 40000);
    const log = args.log && fs.existsSync(args.log) ? fs.readFileSync(args.log).subarray(logAtStop).toString('utf8') : '';
    return { ...figure, completedBeforeStop: inFlightAtStop, exited: !proc(pid).alive, errorLines: (log.match(/^(fail|crit):/gm) ?? []).length, stopping };
  },

  // HTTP/2 over TLS abuse: rapid reset, SETTINGS flood, CONTINUATION flood, zero-window stalls; a parallel client.
  async 'h2-abuse'() {
    const before = proc(pid);
    let peak = before.rssMiB;
    const watch = setInterval(() => { peak = Math.max(peak, proc(pid).rssMiB); }, 200);
    const parallel = { ok: 0, failed: 0 };
    let stop = false;
    const good = (async () => {
      while (!stop) {
        const s = h2session(); s.on('error', () => { });
        for (let i = 0; i < 20 && !stop; i++) { const r = await h2get(s, '/small.txt'); if (r.status === 200) parallel.ok++; else parallel.failed++; }
        s.close();
      }
    })();
    const figure = {};
    const parts = (args.parts ?? 'rapid-reset,settings,continuation,zero-window').split(',');
    // Rapid reset (CVE-2023-44487 shape): open and cancel streams as fast as possible.
    if (parts.includes('rapid-reset')) {
      const s = h2session(); s.on('error', () => { });
      let goaway = false; s.on('goaway', () => { goaway = true; });
      await new Promise(r => s.on('connect', r));
      const n = long ? 100000 : ci ? 5000 : 20000;
      let sent = 0;
      for (let i = 0; i < n && !s.destroyed && !goaway; i++) {
        const req = s.request({ ':path': '/1mib.bin' }); req.on('error', () => { }); req.close(http2.constants.NGHTTP2_CANCEL); sent++;
        if (i % 500 === 0) await sleep(0);
      }
      await sleep(500);
      figure.rapidResetStreams = sent; figure.rapidResetGoaway = goaway || s.destroyed; s.destroy();
    }
    // SETTINGS flood: raw SETTINGS frames as fast as TLS takes them, never reading the ACKs the server owes.
    if (parts.includes('settings')) {
      const socket = tls.connect({ host: https.hostname, port: Number(https.port), ALPNProtocols: ['h2'], rejectUnauthorized: false });
      let closed = false;
      socket.on('error', () => { closed = true; });
      await new Promise(r => socket.once('secureConnect', r));
      socket.on('close', () => { closed = true; });
      socket.pause();
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), rawFrame(4, 0, 0, Buffer.alloc(0))]));
      const settings = rawFrame(4, 0, 0, Buffer.from([0, 2, 0, 0, 0, 0])), batch = Buffer.concat(Array(1000).fill(settings));
      let sent = 0;
      const end = Date.now() + (long ? 20000 : ci ? 2000 : 5000);
      while (!closed && Date.now() < end && sent < 2000000) {
        if (!socket.write(batch)) await new Promise(r => { socket.once('drain', r); setTimeout(r, 500); });
        sent += 1000;
      }
      figure.settingsFloodFrames = sent; figure.settingsFloodClosedByServer = closed; socket.destroy();
    }
    // CONTINUATION flood: HEADERS without END_HEADERS, then endless CONTINUATION frames.
    if (parts.includes('continuation')) {
      const socket = tls.connect({ host: https.hostname, port: Number(https.port), ALPNProtocols: ['h2'], rejectUnauthorized: false });
      socket.on('error', () => { });
      await new Promise(r => socket.once('secureConnect', r));
      const frame = rawFrame;
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(4, 0, 0, Buffer.alloc(0))]));
      // :method GET, :scheme https, :path / (indexed), then a literal header split over CONTINUATIONs.
      socket.write(frame(1, 0x1, 1, Buffer.from([0x82, 0x87, 0x84])));
      let closed = false; socket.on('close', () => { closed = true; });
      let sentBytes = 0;
      const lit = Buffer.concat([Buffer.from([0x40, 0x01, 0x78, 0x7f, 0x81, 0x7f]), Buffer.alloc(16000, 0x61)]);
      for (let i = 0; i < 2000 && !closed; i++) { if (!socket.write(frame(9, 0, 1, lit))) await new Promise(r => { socket.once('drain', r); setTimeout(r, 1000); }); sentBytes += lit.length; }
      await until(() => closed, 5000);
      figure.continuationBytesSent = sentBytes; figure.continuationClosedByServer = closed; socket.destroy();
    }
    // Zero-window stalls: clients that never open their window on 100 MiB.
    if (parts.includes('zero-window')) {
      const sessions = [];
      for (let i = 0; i < (long ? 50 : 20); i++) {
        const s = http2.connect(args.https, { rejectUnauthorized: false, settings: { initialWindowSize: 0 } }); s.on('error', () => { });
        const req = s.request({ ':path': '/big.bin' }); req.on('error', () => { }); req.pause(); req.end();
        sessions.push(s);
      }
      await sleep(long ? 20000 : ci ? 2000 : 5000);
      figure.zeroWindowSessions = sessions.length; figure.zeroWindowStillOpen = sessions.filter(s => !s.destroyed && !s.closed).length;
      sessions.forEach(s => s.destroy());
    }
    stop = true; await good; clearInterval(watch);
    // Every abusive connection must end: Kestrel's open connections back to none within 15 s.
    const connectionsSettled = await until(() => (pools().connections ?? 0) === 0, 15000, 250);
    const after = proc(pid);
    return { ...figure, connectionsSettled, connectionsAfter: pools().connections, rssBeforeMiB: before.rssMiB, rssPeakMiB: peak, rssAfterMiB: after.rssMiB, parallelOk: parallel.ok, parallelFailed: parallel.failed, alive: after.alive };
  },
};

for (const name of (args.cases ?? Object.keys(cases).join(',')).split(',')) {
  const started = Date.now();
  let figure;
  try { figure = await cases[name](); } catch (e) { figure = { error: String(e?.stack ?? e) }; }
  figure.elapsedSeconds = Math.round((Date.now() - started) / 100) / 10;
  figure.serverAfter = proc(pid);
  results[args.name][name] = figure;
  console.log(`${args.name} ${name}: ${JSON.stringify(figure)}`);
  fs.writeFileSync(args.out, JSON.stringify(results, null, 2));
}
process.exit(0);
