// Fingerprinted asset: served with Cache-Control: public, max-age=31536000, immutable.
(function () {
  'use strict';
  async function probe(url, headers) {
    const started = performance.now();
    const response = await fetch(url, { headers, cache: 'no-store' });
    const body = await response.arrayBuffer();
    return { status: response.status, bytes: body.byteLength, ms: (performance.now() - started).toFixed(1),
      encoding: response.headers.get('content-encoding') || 'identity', etag: response.headers.get('etag') };
  }
  async function run() {
    const rows = document.getElementById('probes');
    const cases = [
      ['/css/site.css', {}],
      ['/css/site.css', { 'Range': 'bytes=0-99' }],
      ['/docs/big.txt', {}],
      ['/download/img/gradient.png', {}],
    ];
    for (const [url, headers] of cases) {
      const r = await probe(url, headers);
      const tr = document.createElement('tr');
      tr.innerHTML = `<td><code>${url}</code></td><td>${JSON.stringify(headers)}</td><td>${r.status}</td><td>${r.bytes}</td><td>${r.encoding}</td><td>${r.ms} ms</td>`;
      rows.appendChild(tr);
    }
  }
  document.addEventListener('DOMContentLoaded', run);
})();
