// Today's library and a baseline copy of it (baseline.ts: by default the last
// commit before the scheme-neutral core) timed side by side in one process:
// the verifier, the 402 challenge and the prepaid session figures, each side
// driven through the public API the two share. The sides alternate round by
// round (baseline first in one round, current first in the next), so what the
// machine's neighbours do hits both; each round is timed by this process's CPU
// time (on a shared machine the wall clock measures the share of a core we
// got), and the verdict is the median of the rounds' current/baseline ratios,
// each taken from two adjacent rounds. The core bundle (withL402 and
// verification, esbuild for the browser, minified and gzipped) is measured
// from both copies' sources the same way.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { libsecp256k1Signer } from '../lib/lightning/invoice-signer.js';
import { coreBundleSize } from '../tests/support/packed.js';
import { chooseBaseline, currentLibrary, extractBaseline, loadLibrary, type Library } from './baseline.js';
import { paymentCharges } from './mpp.js';
import { paymentChallenge, paymentCredential, type PaymentChallengeEcho } from './payment-wire.js';

/** The largest ratio below 1 still "within 5%". */
const WITHIN = 0.95;
/** Untimed rounds per side first (JIT, caches), then timed rounds per side. */
const WARM_UP_ROUNDS = 2;
const TIMED_ROUNDS = 10;
/** The core bundle's budget (the packed tarball's is checked in package.ts and tests/package). */
const CORE_BUDGET_BYTES = 25 * 1024;

const ROUTE = '/api/paid';
const URL_OF_ROUTE = `http://127.0.0.1${ROUTE}`;
const SECRET = 'bench-side-by-side-secret-'.padEnd(64, 'x');

interface Sample {
  ops: number;
  cpuMicros: number;
  wallMicros: number;
}

/** One figure for one copy of the library: each call prepares (untimed) and times one round. */
type Round = () => Promise<Sample>;

interface Figure {
  name: string;
  /** What one operation is, for the legend. */
  what: string;
  make(lib: Library): Promise<Round>;
}

export interface FigureResult {
  name: string;
  what: string;
  /** Medians over the timed rounds, operations per CPU second. */
  baselinePerSecond: number;
  currentPerSecond: number;
  /** Median of the per-round current/baseline ratios (CPU time), and the same by the wall clock. */
  ratio: number;
  wallRatio: number;
  /** The middle half of the rounds' ratios (25th and 75th percentiles): how far apart adjacent rounds of the same code land here. */
  ratioSpread: [number, number];
  /** The best round of current over the best of baseline (CPU time): the least disturbed rounds, compared. */
  bestRatio: number;
}

export interface BundleSizes {
  baselineGzippedBytes: number;
  currentGzippedBytes: number;
  baselineMinifiedBytes: number;
  currentMinifiedBytes: number;
}

export type SideBySide =
  | { skipped: string; currentBundle: Omit<BundleSizes, `baseline${string}`> }
  | { baseline: string; figures: FigureResult[]; bundle: BundleSizes };

/** Times `run` (the operations it reports) by CPU and wall clock. */
async function timed(run: () => number | Promise<number>): Promise<Sample> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const ops = await run();
  const wallMicros = (performance.now() - start) * 1000;
  const used = process.cpuUsage(cpu);
  return { ops, cpuMicros: used.user + used.system, wallMicros };
}

const served = (response: Response, status = 200) => {
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}`);
};

/** A fresh L402 credential (token minted for a new payment, its preimage) as an Authorization value. */
function paidAuthorization(lib: Library, keyring: InstanceType<Library['root']['Keyring']>): string {
  const preimage = randomBytes(32);
  const token = lib.root.mintToken(keyring, {
    paymentHash: bytesToHex(sha256(preimage)),
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
    caveats: { route: ROUTE, price_msat: 1000 },
  });
  return `L402 ${token}:${bytesToHex(preimage)}`;
}

const FIGURES: Figure[] = [
  {
    name: 'token verifier',
    what: 'verifyToken + checkCaveats of a valid token and preimage',
    async make(lib) {
      const keyring = new lib.root.Keyring([SECRET]);
      const tokens = Array.from({ length: 256 }, () => {
        const [token, preimage] = paidAuthorization(lib, keyring).slice('L402 '.length).split(':') as [string, string];
        return { token, preimage };
      });
      const expect = { route: ROUTE, priceMsat: 1000 };
      return () =>
        timed(() => {
          const n = 60_000;
          for (let i = 0; i < n; i++) {
            const t = tokens[i & 255]!;
            const r = lib.root.verifyToken(keyring, t.token, t.preimage);
            if (!r.ok || !lib.root.checkCaveats(r.token.caveats, expect).ok) throw new Error('a valid token was refused');
          }
          return n;
        });
    },
  },
  {
    name: 'Payment charge verifier',
    what: 'verifyPaymentAuthorization + checkCaveats of a paid charge credential',
    async make(lib) {
      const keyring = new lib.root.Keyring([SECRET]);
      const credentials = await paymentCharges(SECRET, ROUTE, 64, { ...lib.root, ...lib.backends }, libsecp256k1Signer());
      const expect = { route: ROUTE, priceMsat: 1000, exact: {} };
      return () =>
        timed(() => {
          const n = 2_000;
          for (let i = 0; i < n; i++) {
            const r = lib.root.verifyPaymentAuthorization(keyring, credentials[i & 63]!);
            if (!r.ok || !lib.root.checkCaveats(r.caveats, expect).ok) throw new Error('a paid charge was refused');
          }
          return n;
        });
    },
  },
  {
    name: 'paid request, withL402',
    what: 'a fresh L402 credential through withL402 (fixed price, in-process replay store) to 200',
    async make(lib) {
      const keyring = new lib.root.Keyring([SECRET]);
      const paywalled = lib.root.withL402(() => Response.json({ usd: 100_000 }), {
        priceSats: 1,
        provider: { createInvoice: () => Promise.reject(new Error('every request here is paid')) },
        secret: SECRET,
        route: ROUTE,
      });
      return async () => {
        const requests = Array.from({ length: 5_000 }, () => new Request(URL_OF_ROUTE, { headers: { authorization: paidAuthorization(lib, keyring) } }));
        return timed(async () => {
          for (const request of requests) served(await paywalled(request));
          return requests.length;
        });
      };
    },
  },
  {
    name: '402 challenge, withL402',
    what: 'an unpaid request to a 402 with a fresh signed BOLT11 from the dev node (libsecp256k1) and a signed token, 16 in flight',
    async make(lib) {
      const signInvoice = libsecp256k1Signer();
      return async () => {
        // A fresh node per round: its store of issued invoices starts empty each time.
        const provider = lib.backends.createDevNode({ store: lib.backends.memoryDevNodeStore(), signInvoice });
        const paywalled = lib.root.withL402(() => Response.json({ usd: 100_000 }), { priceSats: 1, provider, secret: SECRET, route: ROUTE });
        return timed(async () => {
          const n = 800;
          let next = 0;
          await Promise.all(
            Array.from({ length: 16 }, async () => {
              while (next++ < n) {
                const response = await paywalled(new Request(URL_OF_ROUTE));
                served(response, 402);
                await response.arrayBuffer();
              }
            }),
          );
          return n;
        });
      };
    },
  },
  {
    name: 'session bearer',
    what: 'a bearer request through withL402 spending one unit of an open session (memory ledger)',
    async make(lib) {
      const batch = 1_500;
      const { handler, bearer } = await openSession(lib, 1 + (WARM_UP_ROUNDS + TIMED_ROUNDS) * batch + 10);
      return async () => {
        const requests = Array.from({ length: batch }, () => new Request(URL_OF_ROUTE, { headers: { authorization: bearer } }));
        return timed(async () => {
          for (const request of requests) served(await handler(request));
          return requests.length;
        });
      };
    },
  },
  {
    name: 'session open',
    what: "an open request (deposit paid, return invoice) through withL402 to the route's answer",
    async make(lib) {
      const net = lib.backends.memoryDevNodeStore();
      const signInvoice = libsecp256k1Signer();
      const wallet = lib.backends.createDevNode({ store: net, signInvoice });
      const handler = sessionHandler(lib, lib.backends.createDevNode({ store: net, signInvoice }), 20);
      return async () => {
        const opens: Request[] = [];
        for (let i = 0; i < 100; i++) opens.push((await openRequest(handler, wallet)).request);
        return timed(async () => {
          for (const request of opens) served(await handler(request));
          return opens.length;
        });
      };
    },
  },
];

type Handler = (request: Request) => Promise<Response>;
type DevNode = ReturnType<Library['backends']['createDevNode']>;

function sessionHandler(lib: Library, provider: DevNode, depositUnits: number): Handler {
  return lib.root.withL402(() => Response.json({ usd: 100_000 }), {
    priceSats: 1,
    provider,
    secret: SECRET,
    route: ROUTE,
    session: lib.lightning.lightningSessions({ unitPriceSats: 1, depositUnits, ledger: lib.lightning.memorySessionLedger() }),
    onError: (error) => {
      throw error;
    },
  });
}

/** A session's open request, made as a payer does: the 402's session challenge, its deposit paid, an amountless return invoice. */
async function openRequest(handler: Handler, wallet: DevNode): Promise<{ request: Request; sessionId: string; preimage: string; echo: PaymentChallengeEcho }> {
  const offered = await handler(new Request(URL_OF_ROUTE));
  served(offered, 402);
  const { echo, request } = paymentChallenge(offered.headers.get('www-authenticate'), 'session');
  const { preimage } = await wallet.pay(String(request.depositInvoice));
  const { invoice: returnInvoice } = await wallet.createAmountlessInvoice({ memo: 'bench refund', expirySeconds: 3600 });
  const authorization = paymentCredential(echo, { action: 'open', preimage, returnInvoice });
  return { request: new Request(URL_OF_ROUTE, { headers: { authorization } }), sessionId: String(request.paymentHash), preimage, echo };
}

/** A session opened with room for `units`, and the bearer credential that spends it. */
async function openSession(lib: Library, units: number): Promise<{ handler: Handler; bearer: string }> {
  const net = lib.backends.memoryDevNodeStore();
  const wallet = lib.backends.createDevNode({ store: net });
  const handler = sessionHandler(lib, lib.backends.createDevNode({ store: net }), units);
  const open = await openRequest(handler, wallet);
  served(await handler(open.request));
  return { handler, bearer: paymentCredential(open.echo, { action: 'bearer', sessionId: open.sessionId, preimage: open.preimage }) };
}

/** The value at fraction `q` of the way through `values` sorted (nearest rank). */
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
const median = (values: number[]) => quantile(values, 0.5);

/** One figure, the two sides alternating round by round. */
async function compare(figure: Figure, baseline: Library, current: Library): Promise<FigureResult> {
  const sides = [await figure.make(baseline), await figure.make(current)] as const;
  for (let i = 0; i < WARM_UP_ROUNDS; i++) for (const round of sides) await round();
  const cpuRates: [number[], number[]] = [[], []];
  const ratios: number[] = [];
  const wallRatios: number[] = [];
  for (let r = 0; r < TIMED_ROUNDS; r++) {
    // Baseline first in even rounds, current first in odd ones: neither always runs on a heap the other left.
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    const samples: Sample[] = [];
    for (const side of order) samples[side] = await sides[side]!();
    const [b, c] = samples as [Sample, Sample];
    cpuRates[0].push(b.ops / (b.cpuMicros / 1e6));
    cpuRates[1].push(c.ops / (c.cpuMicros / 1e6));
    ratios.push(c.ops / c.cpuMicros / (b.ops / b.cpuMicros));
    wallRatios.push(c.ops / c.wallMicros / (b.ops / b.wallMicros));
  }
  return {
    name: figure.name,
    what: figure.what,
    baselinePerSecond: median(cpuRates[0]),
    currentPerSecond: median(cpuRates[1]),
    ratio: median(ratios),
    wallRatio: median(wallRatios),
    ratioSpread: [quantile(ratios, 0.25), quantile(ratios, 0.75)],
    bestRatio: Math.max(...cpuRates[1]) / Math.max(...cpuRates[0]),
  };
}

/** withL402 and verification from one copy's root entry, bundled for a browser as an edge function ships it. */
const coreBundle = (srcDir: string) => coreBundleSize(srcDir, `${srcDir}/index.ts`);

/** `only`: figures whose name contains one of these (all when empty). */
export async function benchSideBySide(only: readonly string[] = []): Promise<SideBySide> {
  const current = await currentLibrary();
  const currentCore = await coreBundle(current.srcDir);
  const choice = chooseBaseline();
  if (!choice.ok)
    return { skipped: choice.skipped, currentBundle: { currentGzippedBytes: currentCore.gzippedBytes, currentMinifiedBytes: currentCore.minifiedBytes } };
  const baseline = await loadLibrary(`baseline ${choice.ref}`, extractBaseline(choice.sha));
  const baselineCore = await coreBundle(baseline.srcDir);
  const figures: FigureResult[] = [];
  for (const figure of FIGURES)
    if (only.length === 0 || only.some((part) => figure.name.includes(part))) figures.push(await compare(figure, baseline, current));
  return {
    baseline: `${choice.ref} (${choice.sha.slice(0, 12)})`,
    figures,
    bundle: {
      baselineGzippedBytes: baselineCore.gzippedBytes,
      currentGzippedBytes: currentCore.gzippedBytes,
      baselineMinifiedBytes: baselineCore.minifiedBytes,
      currentMinifiedBytes: currentCore.minifiedBytes,
    },
  };
}

/**
 * "within 5%", "faster by x%" or "SLOWER by x%" for a current/baseline ratio; a
 * slower median whose rounds' middle half still reaches 0.95 is flagged as unsure (noise can do that: rerun).
 */
export function verdict(ratio: number, spread: readonly [number, number] = [ratio, ratio]): string {
  if (ratio < WITHIN && spread[1] >= WITHIN) return `SLOWER by ${((1 - ratio) * 100).toFixed(1)}%? (unsure: rounds up to ${spread[1].toFixed(2)})`;
  if (ratio < WITHIN) return `SLOWER by ${((1 - ratio) * 100).toFixed(1)}%`;
  if (ratio > 1 / WITHIN) return `within 5% (faster by ${((ratio - 1) * 100).toFixed(1)}%)`;
  return 'within 5%';
}

export function printSideBySide(result: SideBySide, log: (line: string) => void = console.log): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  const budget = (bytes: number) => `${bytes <= CORE_BUDGET_BYTES ? 'under' : 'OVER'} the ${kb(CORE_BUDGET_BYTES)} budget`;
  log("\nToday's code and the baseline side by side, one process (alternating rounds; per CPU second, medians):");
  if ('skipped' in result) {
    log(`  baseline skipped: ${result.skipped}`);
    log(
      `  core bundle    current ${kb(result.currentBundle.currentGzippedBytes)} minified+gzipped from source, ${budget(result.currentBundle.currentGzippedBytes)}`,
    );
    if (result.currentBundle.currentGzippedBytes > CORE_BUDGET_BYTES) process.exitCode = 1;
    return;
  }
  log(`  baseline = ${result.baseline}, current = this tree; ${TIMED_ROUNDS} timed rounds per side after ${WARM_UP_ROUNDS} untimed`);
  log(
    `  ${'figure'.padEnd(24)} ${'baseline/s'.padStart(11)} ${'current/s'.padStart(11)} ${'ratio'.padStart(6)} ${'middle half'.padStart(12)} ${'best'.padStart(6)} ${'wall'.padStart(6)}  verdict`,
  );
  for (const f of result.figures) {
    const spread = `${f.ratioSpread[0].toFixed(2)}-${f.ratioSpread[1].toFixed(2)}`;
    log(
      `  ${f.name.padEnd(24)} ${fmt(f.baselinePerSecond).padStart(11)} ${fmt(f.currentPerSecond).padStart(11)} ${f.ratio.toFixed(3).padStart(6)} ${spread.padStart(12)} ${f.bestRatio.toFixed(3).padStart(6)} ${f.wallRatio.toFixed(3).padStart(6)}  ${verdict(f.ratio, f.ratioSpread)}`,
    );
  }
  const b = result.bundle;
  const growth = b.currentGzippedBytes - b.baselineGzippedBytes;
  log(
    `  ${'core bundle'.padEnd(24)} ${kb(b.baselineGzippedBytes).padStart(11)} ${kb(b.currentGzippedBytes).padStart(11)} ${(b.currentGzippedBytes / b.baselineGzippedBytes).toFixed(3).padStart(6)} ${''.padStart(12)} ${''.padStart(6)} ${''.padStart(6)}  ${budget(b.currentGzippedBytes)} (${growth >= 0 ? '+' : ''}${growth} bytes)`,
  );
  log("  ratio: current/baseline by CPU time, the median of each pair of adjacent rounds' ratio; middle half: their 25th-75th percentiles;");
  log('  best: the best current round over the best baseline round; wall: the median ratio by the wall clock.');
  log('  BENCH_BASELINE=HEAD times this tree against itself: the spread it shows is the noise on this machine now.');
  for (const f of result.figures) log(`  ${f.name.padEnd(24)} ${f.what}`);
  log(
    `  ${'core bundle'.padEnd(24)} withL402, getPayment, verifyAuthorization from each copy's source, esbuild for the browser, minified+gzipped (minified ${kb(b.baselineMinifiedBytes)} / ${kb(b.currentMinifiedBytes)})`,
  );
  if (b.currentGzippedBytes > CORE_BUDGET_BYTES) process.exitCode = 1;
}

/**
 * The macaroon's verification time against the tuned format 1 verifier it
 * replaced (the "token verifier" figure: the same public calls on the
 * baseline's tokens, in the same run), as issue 37's target states it.
 */
export function macaroonAgainstTunedVerifier(result: SideBySide): string {
  if ('skipped' in result) return `macaroon vs the tuned format 1 verifier: not measured (${result.skipped})`;
  const figure = result.figures.find((f) => f.name === 'token verifier');
  if (!figure) return 'macaroon vs the tuned format 1 verifier: not measured (no "token verifier" figure)';
  // ratio is current/baseline in operations per CPU second: its inverse is time per verification.
  const times = 1 / figure.ratio;
  const spread = `${(1 / figure.ratioSpread[1]).toFixed(2)}-${(1 / figure.ratioSpread[0]).toFixed(2)}x`;
  return (
    `${times.toFixed(2)}x the time of the tuned format 1 verifier it replaced (${(1e6 / figure.currentPerSecond).toFixed(2)} against ${(1e6 / figure.baselinePerSecond).toFixed(2)} us per CPU; ` +
    `middle half ${spread}; target <= 1.5x: ${times <= 1.5 ? 'met' : 'NOT met'}; ${result.baseline}, same run)`
  );
}

// `npx tsx bench/side-by-side.ts [part of a figure's name...]` runs it alone (the figures named, or all).
if (import.meta.url === `file://${process.argv[1]}`) printSideBySide(await benchSideBySide(process.argv.slice(2)));
