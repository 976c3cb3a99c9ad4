// npm run bench: the speed targets, measured side by side in one run.
import { benchTokens } from './token.js';
import { benchHttp } from './http.js';
import { benchOverhead } from './overhead.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

console.log('L402 benchmarks (one process per side, this machine, now)\n');

const tokens = benchTokens();
console.log('Token verifier, one core:');
console.log(`  valid tokens   ${fmt(tokens.valid)} verifications/s   (target >= 300,000)`);
console.log(`  forged tokens  ${fmt(tokens.forged)} verifications/s`);

const overhead = await benchOverhead();
console.log('\nPaywall cost per request, in process (fresh paid credential each, memory replay store):');
console.log(`  bare handler   ${overhead.bareMicros.toFixed(1)} us`);
console.log(`  withL402       ${overhead.paidMicros.toFixed(1)} us   (+${overhead.overheadMicros.toFixed(1)} us: parse, verify, caveats, replay claim)`);

const http = await benchHttp();
console.log('\nLocal server, GET with the same Authorization headers, paywalled vs not:');
console.log(`  unprotected    ${fmt(http.freeRps)} requests/s`);
console.log(`  paywalled      ${fmt(http.paidRps)} requests/s   (every request a fresh paid token)`);
console.log(`  ratio          ${http.ratio.toFixed(3)}   (median of back-to-back rounds; target >= 0.9)`);
console.log(`  server CPU     ${http.freeCpuMicros.toFixed(0)} us/request unprotected, ${http.paidCpuMicros.toFixed(0)} us/request paywalled, ratio ${http.cpuRatio.toFixed(3)}`);
if (http.failures > 0) {
  console.error(`  ${http.failures} requests did not answer 2xx: the measurement is void`);
  process.exitCode = 1;
}
