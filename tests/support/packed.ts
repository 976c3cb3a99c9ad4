// The library as its users get it: `npm pack` of packages/l402-paywall, installed
// from the tarball into fresh copies of the fixture apps in tests/fixtures/packed-*
// (in a temporary directory, never the source tree). Used by tests/package and
// by the bench. Installs reach the npm registry only, through npm's cache.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setPriority } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { codeBlocks } from './markdown.js';

export const REPO_DIR = fileURLToPath(new URL('../../', import.meta.url));
export const LIBRARY_DIR = join(REPO_DIR, 'packages/l402-paywall');
export const FIXTURES_DIR = join(REPO_DIR, 'tests/fixtures');

/**
 * The environment for npm and the fixtures' tools: ours, less what an outer
 * `npm test` or `npm run` sets for its own project (workspace, package,
 * lifecycle), which would point a nested npm back at this repository. npm's
 * cache (npm_config_cache, default ~/.npm) is kept: repeated installs are local.
 * The service's settings (stores, backend, secret) are dropped too.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const keep = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig', 'npm_config_globalconfig', 'npm_config_cafile']);
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) && !keep.has(key.toLowerCase())) continue;
    // vitest's own variables (NODE_ENV=test among them) are not the apps': next build sets its own NODE_ENV.
    if (key === 'INIT_CWD' || key === 'NODE_OPTIONS' || key === 'NODE_ENV' || key.startsWith('VITEST') || key === 'TEST') continue;
    // The outer run's own stores and backend (CI sets REDIS_URL) are not a fresh consumer's: a test passes them on purpose.
    if (/^(REDIS_URL|UPSTASH_|KV_|DATABASE_URL|LIGHTNING_|L402_)/.test(key)) continue;
    env[key] = value;
  }
  // No tool phones home: telemetry and update checks off (tests never reach the internet).
  return { ...env, NEXT_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1', DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', ...extra };
}

export interface RunResult {
  code: number | null;
  output: string;
}

/**
 * Runs a command to its end; rejects with its output when it fails. A command
 * still running after `timeoutMs` (default 10 minutes) is ended with whatever
 * it started (its own process group), so a hung install or build cannot hold CI.
 */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; allowFailure?: boolean; timeoutMs?: number; lowPriority?: boolean },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    // Work done beside other tests yields the CPU to them (what it starts inherits the niceness).
    if (options.lowPriority && child.pid !== undefined) {
      try {
        setPriority(child.pid, 10);
      } catch {
        // not permitted here: run at normal priority
      }
    }
    let output = '';
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      },
      options.timeoutMs ?? 10 * 60_000,
    );
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut)
        reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd}) did not end in ${options.timeoutMs ?? 10 * 60_000} ms:\n${output.slice(-6000)}`));
      else if (code === 0 || options.allowFailure) resolve({ code, output });
      else reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd}) exited ${code}:\n${output.slice(-6000)}`));
    });
  });
}

export interface PackedLibrary {
  tarball: string;
  /** Size of the .tgz in bytes. */
  bytes: number;
  /** Paths inside the package. */
  files: string[];
}

/** `npm pack` of the library (or of `packageDir`) into `dest`: runs the package's prepack (tsup), as `npm publish` would. */
export async function packLibrary(
  dest: string,
  { packageDir = LIBRARY_DIR, ...options }: { lowPriority?: boolean; packageDir?: string } = {},
): Promise<PackedLibrary> {
  mkdirSync(dest, { recursive: true });
  const { output } = await run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: packageDir, ...options });
  // prepack's build log comes first on stdout; the JSON report is the last thing printed.
  const report = JSON.parse(output.slice(output.lastIndexOf('\n[') + 1)) as { filename: string; files: { path: string }[] }[];
  const tarball = join(dest, report[0]!.filename);
  return { tarball, bytes: statSync(tarball).size, files: report[0]!.files.map((file) => file.path) };
}

/** The sections of the package README whose file-named snippets make its Next.js recipe. */
export const README_RECIPE_SECTIONS = ['Try it offline', 'Prepaid sessions'];

/**
 * The package README's Next.js recipe as a user pastes it: each TypeScript
 * snippet of README_RECIPE_SECTIONS whose first line names its file
 * (`// app/api/hello/route.ts`), that file's path and its text exactly.
 */
export function readmeRecipe(): Map<string, string> {
  const guide = readFileSync(join(LIBRARY_DIR, 'README.md'), 'utf8');
  const files = new Map<string, string>();
  for (const block of codeBlocks(guide)) {
    if (!README_RECIPE_SECTIONS.includes(block.heading) || block.lang !== 'ts') continue;
    const path = /^\/\/ ((?:[\w@[\].-]+\/)*[\w@[\].-]+\.tsx?)\b/.exec(block.code)?.[1];
    if (path) files.set(path, `${block.code.trimEnd()}\n`);
  }
  return files;
}

/** Modules of tests/fixtures/packed-shared a fixture app imports as its own (copied into it, so they load its installed package). */
const SHARED_MODULES: Record<string, readonly string[]> = { 'packed-express': ['paid-app.js'], 'packed-node-http': ['paid-app.js'] };

/**
 * Copies tests/fixtures/<fixture> (and the shared modules it imports) to `into`, writes `files` into it (the
 * README's recipe), points its `l402-paywall` dependency at the tarball and
 * runs `npm install` there. Returns the directory.
 */
export async function installFixture(
  fixture: string,
  tarball: string,
  into: string,
  options: { lowPriority?: boolean; files?: Map<string, string> } = {},
): Promise<string> {
  cpSync(join(FIXTURES_DIR, fixture), into, { recursive: true, filter: (source) => !/[\\/](node_modules|\.next)$/.test(source) });
  for (const shared of SHARED_MODULES[fixture] ?? []) cpSync(join(FIXTURES_DIR, 'packed-shared', shared), join(into, shared));
  for (const [path, text] of options.files ?? []) {
    mkdirSync(dirname(join(into, path)), { recursive: true });
    writeFileSync(join(into, path), text);
  }
  const manifestPath = join(into, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { dependencies?: Record<string, string> };
  manifest.dependencies = { ...manifest.dependencies, 'l402-paywall': `file:${tarball}` };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: into, lowPriority: options.lowPriority });
  return into;
}

/** The packages npm installed in a project (its lockfile's node_modules entries). */
export function installedPackages(project: string): string[] {
  const lock = JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, { link?: boolean }> };
  return Object.keys(lock.packages)
    .filter((path) => path.startsWith('node_modules/'))
    .map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    .sort();
}

/**
 * The core as a cold start pays for it: `withL402` and the credential
 * verification, bundled with esbuild for a browser platform (what an edge
 * function ships), minified, then gzipped. From the package installed in
 * `project`, or (`from`) another copy's root entry, e.g. a source tree's
 * src/index.ts (bench/side-by-side.ts).
 *
 * Code splitting is on, as in the bundlers that ship route handlers (Next.js,
 * Vercel's): what the library loads with `import()` only when an option asks
 * for it (the audit events' builders, loaded with `onEvent`) lands in chunks of
 * its own, which a paywall without that option never loads. The core is the
 * entry and the chunks it imports statically; `lazyGzippedBytes` is the rest,
 * reported apart.
 */
export async function coreBundleSize(
  project: string,
  from = 'l402-paywall',
): Promise<{ minifiedBytes: number; gzippedBytes: number; lazyGzippedBytes: number }> {
  const { build } = await import('esbuild');
  const entry = 'core-bundle-entry';
  const result = await build({
    entryPoints: [entry],
    plugins: [
      {
        name: entry,
        setup(plugin) {
          plugin.onResolve({ filter: new RegExp(`^${entry}$`) }, () => ({ path: entry, namespace: entry }));
          plugin.onLoad({ filter: /.*/, namespace: entry }, () => ({
            contents: `export { withL402, getPayment, verifyAuthorization } from ${JSON.stringify(from)};`,
            resolveDir: project,
            loader: 'js',
          }));
        },
      },
    ],
    bundle: true,
    splitting: true,
    outdir: join(project, '.core-bundle'),
    minify: true,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'browser',
    logLevel: 'silent',
  });
  const outputs = result.metafile!.outputs;
  const contents = new Map(result.outputFiles!.map((file) => [relative(process.cwd(), file.path), file.contents]));
  const entryOutput = Object.keys(outputs).find((path) => outputs[path]!.entryPoint !== undefined)!;
  const core = new Set<string>();
  const visit = (path: string) => {
    if (core.has(path)) return;
    core.add(path);
    for (const imported of outputs[path]!.imports) if (imported.kind === 'import-statement' && !imported.external) visit(imported.path);
  };
  visit(entryOutput);
  const concat = (paths: string[]) => Buffer.concat(paths.map((path) => contents.get(path)!));
  const coreCode = concat([...core]);
  const lazy = Object.keys(outputs).filter((path) => !core.has(path) && !path.endsWith('.map'));
  return {
    minifiedBytes: coreCode.byteLength,
    gzippedBytes: gzipSync(coreCode, { level: 9 }).byteLength,
    lazyGzippedBytes: lazy.length === 0 ? 0 : gzipSync(concat(lazy), { level: 9 }).byteLength,
  };
}

/** A free TCP port on 127.0.0.1 (for servers that cannot report the one they took). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RunningServer {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts a long-running server in a process group of its own and waits until
 * it prints `listening <url>` (or matches `ready`, then `url` is given).
 * stop() ends that group: the server and whatever it started (workerd, deno).
 */
export function startServer(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; ready?: RegExp; url?: string; startupMs?: number },
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    let settled = false;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // already gone
        }
        const timer = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }, 5_000);
        await exited;
        clearTimeout(timer);
      }
    };
    // A server that never comes up must not hold the suite until its timeout unexplained.
    const giveUp = setTimeout(
      () => fail(new Error(`${command} ${args.join(' ')} did not start in ${options.startupMs ?? 60_000} ms:\n${output}`)),
      options.startupMs ?? 60_000,
    );
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(giveUp);
      void stop().then(() => reject(error));
    };
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (settled) return;
      const url = options.ready ? (options.ready.test(output) ? options.url : undefined) : /listening (http:\/\/\S+)/.exec(output)?.[1];
      if (url) {
        settled = true;
        clearTimeout(giveUp);
        resolve({ url, output: () => output, stop });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error) => fail(error));
    child.once('exit', (code, signal) => fail(new Error(`${command} ${args.join(' ')} exited (${code ?? signal}) before it was ready:\n${output}`)));
  });
}

/** Total size of a directory tree in bytes (what an install put on disk). */
export function directoryBytes(path: string): number {
  if (!existsSync(path)) return 0;
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) total += directoryBytes(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

// The slow preparation (pack, installs, the Next.js build) runs in vitest's main
// process, started by tests/package/prepare.ts when the run begins, while the
// other suites use the worker; each step leaves its result in a file that
// tests/package/packed.test.ts waits for.

export interface StepResult<T> {
  ok: boolean;
  seconds: number;
  value?: T;
  error?: string;
}

const stepFile = (work: string, name: string) => join(work, 'steps', `${name.replace(/[^a-z0-9-]/gi, '_')}.json`);

/**
 * Runs one step once `after` (the step it needs) has ended, and records how it
 * ended and how long it took itself (written whole: a reader never sees half a file).
 */
export async function recordStep<T, A>(work: string, name: string, after: Promise<A>, step: (input: A) => Promise<T>): Promise<T> {
  let start = Date.now();
  const write = (result: StepResult<T>) => {
    mkdirSync(join(work, 'steps'), { recursive: true });
    const file = stepFile(work, name);
    writeFileSync(`${file}.tmp`, JSON.stringify(result));
    renameSync(`${file}.tmp`, file);
  };
  try {
    const input = await after;
    start = Date.now();
    const value = await step(input);
    write({ ok: true, seconds: (Date.now() - start) / 1000, value });
    return value;
  } catch (error) {
    write({ ok: false, seconds: (Date.now() - start) / 1000, error: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

/** Waits until a step recorded by recordStep has ended; its value, or its error thrown. */
export async function awaitStep<T>(work: string, name: string): Promise<T> {
  const file = stepFile(work, name);
  while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 250));
  const result = JSON.parse(readFileSync(file, 'utf8')) as StepResult<T>;
  if (!result.ok) throw new Error(`${name} failed: ${result.error}`);
  return result.value as T;
}

/** Every recorded step and how long it took, for the log. */
export function stepTimings(work: string): string[] {
  const dir = join(work, 'steps');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => {
      const result = JSON.parse(readFileSync(join(dir, file), 'utf8')) as StepResult<unknown>;
      return `${file.slice(0, -'.json'.length)} ${result.seconds.toFixed(1)} s${result.ok ? '' : ' (failed)'}`;
    });
}
