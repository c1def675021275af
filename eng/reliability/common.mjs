// Shared helpers for the reliability suite: raw HTTP/1.1 over net sockets, process figures from /proc.
import net from 'node:net';
import tls from 'node:tls';
import fs from 'node:fs';

export const sleep = ms => new Promise(r => setTimeout(r, ms));

/** Descriptors and resident memory of a process, from /proc. */
export function proc(pid) {
  let fds = -1, rssKiB = -1;
  try { fds = fs.readdirSync(`/proc/${pid}/fd`).length; } catch { }
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    rssKiB = m ? Number(m[1]) : -1;
  } catch { }
  return { fds, rssMiB: Math.round(rssKiB / 102.4) / 10, alive: fs.existsSync(`/proc/${pid}`) };
}

/** Waits (bounded) until f() is true. */
export async function until(f, ms = 10000, step = 100) {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (await f()) return true; await sleep(step); }
  return false;
}

/** A keep-alive HTTP/1.1 connection (plaintext, or TLS with ALPN http/1.1) that parses Content-Length responses off a raw socket. */
export class RawConnection {
  constructor(host, port, { secure = false } = {}) { this.host = host; this.port = port; this.secure = secure; this.buf = Buffer.alloc(0); this.closed = false; this.waiters = []; }
  connect(timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const s = this.secure
        ? tls.connect({ host: this.host, port: this.port, ALPNProtocols: ['http/1.1'], rejectUnauthorized: false })
        : net.connect({ host: this.host, port: this.port });
      this.socket = s;
      const t = setTimeout(() => { reject(new Error('connect timeout')); }, timeoutMs);
      s.once(this.secure ? 'secureConnect' : 'connect', () => { clearTimeout(t); resolve(this); });
      s.on('data', d => { this.buf = Buffer.concat([this.buf, d]); this._wake(); });
      s.on('error', e => { this.error = e; });
      s.on('close', () => { this.closed = true; clearTimeout(t); reject(new Error('closed')); this._wake(); });
    });
  }
  _wake() { const w = this.waiters; this.waiters = []; w.forEach(f => f()); }
  _wait(ms) { return new Promise(r => { const t = setTimeout(r, ms); this.waiters.push(() => { clearTimeout(t); r(); }); }); }
  write(s) { this.socket.write(s); }
  /** Reads one response (head, then Content-Length bytes; none for HEAD). Returns {status, headers, body, complete}. */
  async response(method = 'GET', timeoutMs = 30000) {
    const end = Date.now() + timeoutMs;
    let idx;
    while ((idx = this.buf.indexOf('\r\n\r\n')) < 0) {
      if (this.closed || Date.now() > end) return { status: 0, headers: {}, body: Buffer.alloc(0), complete: false, timedOut: !this.closed };
      await this._wait(end - Date.now());
    }
    const head = this.buf.subarray(0, idx).toString('latin1').split('\r\n');
    this.buf = this.buf.subarray(idx + 4);
    const status = Number(head[0].split(' ')[1]);
    const headers = {};
    for (const line of head.slice(1)) { const c = line.indexOf(':'); headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim(); }
    const length = method === 'HEAD' || status === 304 || status === 204 ? 0 : Number(headers['content-length'] ?? 0);
    while (this.buf.length < length) {
      if (this.closed || Date.now() > end) break;
      await this._wait(end - Date.now());
    }
    const body = this.buf.subarray(0, Math.min(length, this.buf.length));
    this.buf = this.buf.subarray(body.length);
    return { status, headers, body, complete: body.length === length };
  }
  async request(target, { method = 'GET', headers = '', timeoutMs } = {}) {
    this.write(`${method} ${target} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`);
    return this.response(method, timeoutMs);
  }
  destroy() { this.socket?.destroy(); }
  reset() { this.socket?.resetAndDestroy(); }
}

/** One request on a fresh connection (Connection: close); the raw bytes are sent as given. */
export function rawExchange(host, port, bytes, timeoutMs = 15000) {
  return new Promise(resolve => {
    const s = net.connect({ host, port });
    let data = Buffer.alloc(0);
    const t = setTimeout(() => { s.destroy(); done(true); }, timeoutMs);
    let finished = false;
    const done = timedOut => {
      if (finished) return; finished = true; clearTimeout(t);
      const text = data.toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map(m => Number(m[1]));
      resolve({ statuses, text, timedOut });
    };
    s.on('connect', () => s.write(bytes));
    s.on('data', d => { data = Buffer.concat([data, d]); });
    s.on('error', () => { });
    s.on('close', () => done(false));
  });
}
