// The library as it was at a baseline commit, loaded beside today's in the same
// process so the two can be timed in alternating rounds (side-by-side.ts).
// `git archive <ref> packages/l402-paywall/src` is unpacked once per commit
// into node_modules/.cache/l402-bench/<sha>/ and imported by path through tsx;
// its own imports (@noble, @scure, zod) resolve from this repository's
// node_modules, walking up from the cache directory.
//
// BENCH_BASELINE=<ref> picks the commit (default below: the last one before
// the scheme-neutral core), BENCH_BASELINE=none skips the comparison. Without
// git history (a tarball, a shallow clone) the comparison is skipped and says why.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Root from 'l402-paywall';
import type * as Backends from 'l402-paywall/backends';
import type * as Lightning from 'l402-paywall/lightning';

/** The last commit before issue 36 restructured the library. */
export const DEFAULT_BASELINE = 'be85339';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE_ROOT = join(REPO_ROOT, 'node_modules/.cache/l402-bench');
const SRC = 'packages/l402-paywall/src';
const PACKAGE_JSON = 'packages/l402-paywall/package.json';
/** Written last: a directory without it is an interrupted extraction, never reused. */
const COMPLETE_MARKER = '.complete';

/**
 * The public API the side-by-side harness drives, as it exists in both the
 * baseline and today's library. Typed with today's declarations; the baseline's
 * runtime shapes are the same (that is the contract the comparison relies on).
 */
export interface Library {
  /** 'baseline be85339' or 'current'. */
  label: string;
  /** The directory holding this copy's `src/` entries (for the bundle size). */
  srcDir: string;
  root: Pick<typeof Root, 'withL402' | 'Keyring' | 'mintToken' | 'verifyToken' | 'checkCaveats' | 'verifyPaymentAuthorization'>;
  lightning: Pick<typeof Lightning, 'lightningSessions' | 'memorySessionLedger'>;
  backends: Pick<typeof Backends, 'createDevNode' | 'memoryDevNodeStore'>;
}

export type BaselineChoice = { ok: true; ref: string; sha: string } | { ok: false; skipped: string };

/** Which baseline to load, from BENCH_BASELINE, or why none is loaded. */
export function chooseBaseline(env: string | undefined = process.env.BENCH_BASELINE): BaselineChoice {
  const ref = env?.trim() || DEFAULT_BASELINE;
  if (ref === 'none') return { ok: false, skipped: 'BENCH_BASELINE=none' };
  const inside = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (inside.error || inside.status !== 0)
    return { ok: false, skipped: `no git history here (${inside.error?.message ?? 'not a git work tree'}): a tarball or an export` };
  const resolved = spawnSync('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (resolved.status !== 0) {
    const shallow = spawnSync('git', ['rev-parse', '--is-shallow-repository'], { cwd: REPO_ROOT, encoding: 'utf8' }).stdout.trim() === 'true';
    return {
      ok: false,
      skipped: `commit ${ref} is not in this clone's history${shallow ? ' (a shallow clone: git fetch --unshallow brings it)' : ''}; BENCH_BASELINE=<ref> picks another`,
    };
  }
  return { ok: true, ref, sha: resolved.stdout.trim() };
}

/** The baseline's library directory, unpacked from git on first use and reused after. */
export function extractBaseline(sha: string): string {
  const dir = join(CACHE_ROOT, sha);
  if (existsSync(join(dir, COMPLETE_MARKER))) return join(dir, SRC);
  mkdirSync(CACHE_ROOT, { recursive: true });
  // Unpacked beside the final place, then renamed: two runs at once never read a half-written tree.
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  // The package.json too: its "type" and "sideEffects" decide how the sources load and bundle, as they do for today's copy.
  const archive = execFileSync('git', ['archive', '--format=tar', sha, SRC, PACKAGE_JSON], { cwd: REPO_ROOT, maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', partial], { input: archive });
  writeFileSync(join(partial, COMPLETE_MARKER), `${sha}\n`);
  try {
    renameSync(partial, dir);
  } catch (error) {
    // Another run finished first: use its copy.
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(join(dir, COMPLETE_MARKER))) throw error;
  }
  return join(dir, SRC);
}

/** A copy of the library's public entries loaded from `srcDir` (its index.ts, lightning.ts, backends.ts). */
export async function loadLibrary(label: string, srcDir: string): Promise<Library> {
  const entry = (name: string) => import(pathToFileURL(join(srcDir, `${name}.ts`)).href);
  const [root, lightning, backends] = await Promise.all([entry('index'), entry('lightning'), entry('backends')]);
  return { label, srcDir, root: root as Library['root'], lightning: lightning as Library['lightning'], backends: backends as Library['backends'] };
}

/** Today's library: the same entries the rest of the bench imports by package name. */
export async function currentLibrary(): Promise<Library> {
  const [root, lightning, backends] = await Promise.all([import('l402-paywall'), import('l402-paywall/lightning'), import('l402-paywall/backends')]);
  // Where the package name leads (tsconfig paths: the sources), for bundling the core the same way as the baseline's.
  const srcDir = dirname(fileURLToPath(import.meta.resolve('l402-paywall')));
  return { label: 'current', srcDir, root, lightning, backends };
}
