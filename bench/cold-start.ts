// Cold start of a deployed function: a fresh Node process importing the demo's
// api/demo/btc-price as Vercel runs it and answering its first request (the
// 402 with a fresh invoice from the embedded dev node), with the local
// environment the deploy test gives a built function (tests/deploy/vercel-build.test.ts:
// no database URL, no store, no provider settings; DATA_DIR, BTC_PRICE_SOURCES=none,
// L402_SECRET).
//
// What runs is the function as Vercel's Node builder outputs it: every file
// of api/ and lib/ compiled to JavaScript on its own (esbuild here, TypeScript
// there; neither bundles), loaded by Node with the dependencies it imports
// from node_modules (Vercel copies the traced files; the same files load).
// `vercel build` itself takes minutes, so it is not run here; a function it
// built can be measured too: COLD_START_FUNCTION=<path to .vercel/output/functions/api/demo/btc-price.func>.
//
// Side by side in one run: this checkout's api/ and lib/, and the same files of
// another commit (COLD_START_BASE, default main) taken with `git archive`, the
// runs interleaved so both see the same machine load. Both sides load the
// library as built in node_modules (packages/l402-paywall/dist).
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { transform } from 'esbuild';

const run = promisify(execFile);
const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FUNCTION = 'api/demo/btc-price';

export interface ColdStartSide {
  label: string;
  /** Median of the runs, wall time in the fresh process from before the import to the 402 read. */
  totalMs: number;
  /** Median wall time of the import alone (module loading and evaluation). */
  importMs: number;
  /** Median wall time of the first request (the service context built, the invoice made and signed). */
  firstRequestMs: number;
  /** Median CPU time of the process over the same span (every thread). */
  cpuMs: number;
  /** Modules loaded (ES modules and CommonJS files, node: built-ins not counted), in the first run. */
  modules: number;
  runs: number[];
}

export interface ColdStartBench {
  runs: number;
  current: ColdStartSide;
  base?: ColdStartSide & { ref: string };
  /** A function `vercel build` made, when COLD_START_FUNCTION names one. */
  built?: ColdStartSide;
}

export async function benchColdStart({ runs = 9, base = process.env.COLD_START_BASE ?? 'main' } = {}): Promise<ColdStartBench> {
  ensureLibraryBuilt();
  const work = mkdtempSync(join(tmpdir(), 'l402-bench-cold-start-'));
  try {
    const sides: Array<{ label: string; handler: string }> = [];
    sides.push({ label: 'this checkout', handler: await compileFunctionTree(projectRoot, join(work, 'current')) });
    let baseRef: string | undefined;
    if (base && base !== 'none') {
      try {
        const source = join(work, 'base-source');
        mkdirSync(source);
        const archive = execFileSync('git', ['archive', '--format=tar', base, 'api', 'lib', 'package.json'], {
          cwd: projectRoot,
          maxBuffer: 256 * 1024 * 1024,
        });
        execFileSync('tar', ['-x', '-C', source], { input: archive });
        sides.push({ label: base, handler: await compileFunctionTree(source, join(work, 'base')) });
        baseRef = base;
      } catch (error) {
        console.warn(`  (cold start: ${base} not compared: ${error instanceof Error ? error.message.split('\n')[0] : error})`);
      }
    }
    const built = process.env.COLD_START_FUNCTION;
    if (built) {
      const config = JSON.parse(readFileSync(join(built, '.vc-config.json'), 'utf8')) as { handler: string };
      sides.push({ label: 'vercel build output', handler: join(built, config.handler) });
    }
    const samples = sides.map(() => [] as Sample[]);
    // One warm-up round (the file system cache), then the runs, interleaved.
    for (const side of sides) await coldStart(side.handler, work);
    for (let i = 0; i < runs; i++) for (const [index, side] of sides.entries()) samples[index]!.push(await coldStart(side.handler, work));
    const summaries = sides.map((side, index) => summarise(side.label, samples[index]!));
    return {
      runs,
      current: summaries[0]!,
      ...(baseRef ? { base: { ...summaries[1]!, ref: baseRef } } : {}),
      ...(built ? { built: summaries.at(-1)! } : {}),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

interface Sample {
  importMs: number;
  firstMs: number;
  cpuMs: number;
  modules: number;
}

/** The script the fresh process runs: import the function, answer one request, say how long each took. */
const PROBE = `
const t0 = performance.now(); const c0 = process.cpuUsage();
const { default: fn } = await import(process.env.COLD_START_HANDLER);
const t1 = performance.now();
const response = await fn.fetch(new Request('http://127.0.0.1/api/demo/btc-price'));
await response.arrayBuffer();
const t2 = performance.now(); const c = process.cpuUsage(c0);
const { createRequire } = await import('node:module');
const cjs = Object.keys(createRequire(process.env.COLD_START_HANDLER).cache).length;
console.log(JSON.stringify({ status: response.status, importMs: t1 - t0, firstMs: t2 - t1, cpuMs: (c.user + c.system) / 1000, cjs }));
process.exit(0);
`;

/** Counts the ES modules a process loads (registered before the probe runs). */
const COUNT_HOOK = `
import { register } from 'node:module';
const { port1, port2 } = new MessageChannel();
let esm = 0;
port1.on('message', () => { esm++; });
port1.unref();
globalThis.__esmLoaded = () => esm;
register('data:text/javascript,' + encodeURIComponent(\`
let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) { if (!url.startsWith('node:')) port.postMessage(1); return next(url, context); }
\`), { data: { port: port2 }, transferList: [port2] });
`;

async function coldStart(handler: string, work: string): Promise<Sample> {
  const dataDir = mkdtempSync(join(work, 'data-'));
  try {
    // The deploy test's environment for a built function: nothing of this machine's service settings.
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(NODE_ENV|VERCEL|UPSTASH_|KV_|LIGHTNING_|DATABASE_URL|L402_|NODE_OPTIONS)/.test(key)),
    );
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', PROBE], {
      cwd: dirname(handler),
      env: {
        ...clean,
        COLD_START_HANDLER: pathToFileURL(handler).href,
        DATA_DIR: dataDir,
        BTC_PRICE_SOURCES: 'none',
        L402_SECRET: 'cold-start-bench-secret-0123456789abcdef',
      },
      timeout: 60_000,
    });
    const answer = JSON.parse(stdout.trim().split('\n').pop()!) as { status: number; importMs: number; firstMs: number; cpuMs: number; cjs: number };
    if (answer.status !== 402) throw new Error(`${FUNCTION} answered ${answer.status}, not 402`);
    return { importMs: answer.importMs, firstMs: answer.firstMs, cpuMs: answer.cpuMs, modules: answer.cjs + (await countEsm(handler, dataDir, clean)) };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const esmCounts = new Map<string, number>();

/** ES modules loaded by the import and first request, counted once per function (a loader hook slows the process it runs in). */
async function countEsm(handler: string, dataDir: string, env: Record<string, string | undefined>): Promise<number> {
  const known = esmCounts.get(handler);
  if (known !== undefined) return known;
  const script = `${COUNT_HOOK}
const { default: fn } = await import(process.env.COLD_START_HANDLER);
await (await fn.fetch(new Request('http://127.0.0.1/api/demo/btc-price'))).arrayBuffer();
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(globalThis.__esmLoaded());
process.exit(0);`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    cwd: dirname(handler),
    env: {
      ...env,
      COLD_START_HANDLER: pathToFileURL(handler).href,
      DATA_DIR: dataDir,
      BTC_PRICE_SOURCES: 'none',
      L402_SECRET: 'cold-start-bench-secret-0123456789abcdef',
    },
    timeout: 60_000,
  });
  const count = Number(stdout.trim().split('\n').pop());
  esmCounts.set(handler, count);
  return count;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

function summarise(label: string, samples: Sample[]): ColdStartSide {
  return {
    label,
    totalMs: median(samples.map((s) => s.importMs + s.firstMs)),
    importMs: median(samples.map((s) => s.importMs)),
    firstRequestMs: median(samples.map((s) => s.firstMs)),
    cpuMs: median(samples.map((s) => s.cpuMs)),
    modules: samples[0]!.modules,
    runs: samples.map((s) => s.importMs + s.firstMs),
  };
}

/**
 * `root`'s api/ and lib/ as Vercel's Node builder leaves them: each .ts file
 * compiled to a .js next to where it was, the migrations copied, the
 * project's package.json (ES modules) and node_modules. Returns the handler.
 */
export async function compileFunctionTree(root: string, out: string): Promise<string> {
  for (const dir of ['api', 'lib']) {
    for (const file of walk(join(root, dir))) {
      const target = join(out, relative(root, file));
      mkdirSync(dirname(target), { recursive: true });
      if (file.endsWith('.ts') && !file.endsWith('.d.ts')) {
        const { code } = await transform(readFileSync(file, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20', sourcefile: file });
        writeFileSync(target.replace(/\.ts$/, '.js'), code);
      } else if (!file.endsWith('.ts')) cpSync(file, target);
    }
  }
  cpSync(join(root, 'package.json'), join(out, 'package.json'));
  symlinkSync(join(projectRoot, 'node_modules'), join(out, 'node_modules'));
  return join(out, `${FUNCTION}.js`);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]));
}

/** The functions import l402-paywall from its dist/, as on Vercel (the build step builds it). */
function ensureLibraryBuilt(): void {
  if (existsSync(join(projectRoot, 'packages/l402-paywall/dist/index.js'))) return;
  execFileSync('npm', ['run', 'build', '-w', 'l402-paywall'], { cwd: projectRoot, stdio: 'ignore' });
}

export function printColdStartBench(bench: ColdStartBench): void {
  const line = (side: ColdStartSide) =>
    console.log(
      `  ${side.label.padEnd(20)} ${side.totalMs.toFixed(0).padStart(5)} ms   (import ${side.importMs.toFixed(0)} ms = ${((side.importMs / side.totalMs) * 100).toFixed(0)}%, first 402 ${side.firstRequestMs.toFixed(0)} ms; CPU ${side.cpuMs.toFixed(0)} ms; ${side.modules} modules)`,
    );
  console.log(`\nCold start of ${FUNCTION} (fresh node process: import the compiled function + its first 402; median of ${bench.runs}, interleaved):`);
  line(bench.current);
  if (bench.base) {
    line(bench.base);
    console.log(
      `  ratio                ${(bench.base.totalMs / bench.current.totalMs).toFixed(2)}x   (${bench.base.ref} / this checkout: above 1 this checkout starts faster)`,
    );
  }
  if (bench.built) line(bench.built);
  console.log(`  target               < 300 ms   (the local environment of the deploy test: dev node, memory store, PGlite under DATA_DIR unopened)`);
  if (bench.current.totalMs >= 300) console.log('  ABOVE TARGET (on a busy machine wall times read high: compare the side-by-side ratio and CPU)');
}
