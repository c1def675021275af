// The CI verdict on a reliability run: reads results.json and fails (exit 1) on any figure that breaks a promise.
// Usage: node check.mjs results.json [server]
import fs from 'node:fs';

const results = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const server = process.argv[3] ?? 'fastfiles';
const r = results[server] ?? {};
const failures = [];
const expect = (ok, what) => { if (!ok) failures.push(what); };

if (r.hostile) expect(r.hostile.fiveXX === 0 && r.hostile.leaked === 0 && r.hostile.alive, 'hostile: a 5xx, a leaked byte, or the server died');
if (r.churn) expect(r.churn.mismatched === 0 && r.churn.cutShortOpen === 0, 'churn: a body that does not match its headers, or a cut-short body on an open connection');
if (r.reset) expect(r.reset.settled, 'reset: connections, cache entries, open files, send path blocks or descriptors did not come back');
// Not connectionsSettled: after a rapid reset Kestrel itself sometimes keeps one HTTP/2 connection counted as active with
// its socket gone (stock UseStaticFiles too: 1 of 3 runs), which only delays shutdown to HostOptions.ShutdownTimeout.
if (r['h2-abuse']) expect(r['h2-abuse'].alive && r['h2-abuse'].parallelFailed === 0, 'h2-abuse: the server died or the parallel client failed');
if (r.exhaustion) expect(r.exhaustion.alive && r.exhaustion.recovered, 'exhaustion: the server died or did not recover');
if (r.shutdown) expect(r.shutdown.exited && r.shutdown.cutButOpen === 0 && r.shutdown.errorLines === 0, 'shutdown: a cut-short body on an open connection, an error logged, or no exit');
for (const [name, figure] of Object.entries(r)) if (figure?.error) failures.push(`${name}: ${figure.error}`);

for (const f of failures) console.error(`reliability: ${f}`);
console.log(failures.length ? `reliability: ${failures.length} failed` : `reliability: ${server} passed (${Object.keys(r).join(', ')})`);
process.exit(failures.length ? 1 : 0);
