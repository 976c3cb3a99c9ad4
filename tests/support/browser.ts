// The browser the page tests drive through playwright-core (which brings none
// of its own, and whose `playwright install` download does not work offline).
//
// Which Chromium, in order:
//   1. CHROMIUM_PATH, when set (it must exist);
//   2. /usr/bin/chromium, when installed (Debian's package), unless
//      L402_TEST_BROWSER=bundled asks for the next one;
//   3. the Chromium shipped inside the @sparticuz/chromium npm package (a
//      devDependency, so `npm install` brings it with nothing downloaded at run
//      time): its brotli archives are unpacked once into node_modules/.cache/,
//      with the NSS libraries and fonts it ships, so it needs no system package.
//      Only the package's files are used, never its code. It is held at major
//      143, the last whose `engines` allows Node 20 (later ones ask for 22.17).
// Nothing here skips: a browser that cannot be found or started fails the tests
// that need it, with the reason.
import { execFileSync } from 'node:child_process';
import {
  accessSync,
  constants,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Flags that keep a headless Chromium quiet and off the network on this kind of machine. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ChosenBrowser {
  executablePath: string;
  source: 'CHROMIUM_PATH' | 'system' | 'bundled';
  /** Extra environment for the browser process (the bundled build's libraries and fonts). */
  env: Record<string, string>;
}

export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChosenBrowser> {
  if (env.CHROMIUM_PATH) {
    if (!isExecutable(env.CHROMIUM_PATH)) throw new Error(`CHROMIUM_PATH=${env.CHROMIUM_PATH} is not an executable file`);
    return { executablePath: env.CHROMIUM_PATH, source: 'CHROMIUM_PATH', env: {} };
  }
  if (env.L402_TEST_BROWSER !== 'bundled' && isExecutable(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, source: 'system', env: {} };
  return bundledChromium();
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Unpacks @sparticuz/chromium's archives once per package version; safe when several test files race to do it. */
async function bundledChromium(): Promise<ChosenBrowser> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `No Chromium: /usr/bin/chromium is absent and the npm-bundled build (@sparticuz/chromium) is for linux-x64 only, not ${process.platform}-${process.arch}. Install Chromium or set CHROMIUM_PATH.`,
    );
  }
  const require = createRequire(import.meta.url);
  // The package exports only its entry point (somewhere under build/, by major version): its root is the first folder above with its package.json.
  let root = dirname(require.resolve('@sparticuz/chromium'));
  while (
    !existsSync(join(root, 'package.json')) ||
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: string }).name !== '@sparticuz/chromium'
  ) {
    if (dirname(root) === root) throw new Error('@sparticuz/chromium: its package.json was not found above its entry point');
    root = dirname(root);
  }
  const packageJson = join(root, 'package.json');
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };
  const bin = join(dirname(packageJson), 'bin');
  const target = join(PROJECT_ROOT, 'node_modules', '.cache', 'l402-chromium', version);
  const executablePath = join(target, 'chromium');
  if (!existsSync(join(target, 'ready'))) {
    mkdirSync(dirname(target), { recursive: true });
    const staging = mkdtempSync(`${target}.unpacking-`);
    try {
      await pipeline(createReadStream(join(bin, 'chromium.br')), createBrotliDecompress(), createWriteStream(join(staging, 'chromium'), { mode: 0o755 }));
      for (const archive of ['al2023.tar.br', 'fonts.tar.br']) {
        const tar = join(staging, archive.replace(/\.br$/, ''));
        await pipeline(createReadStream(join(bin, archive)), createBrotliDecompress(), createWriteStream(tar));
        const into = join(staging, archive.startsWith('fonts') ? 'fonts' : 'al2023');
        mkdirSync(into, { recursive: true });
        execFileSync('tar', ['-xf', tar, '-C', into]);
        rmSync(tar);
      }
      writeFileSync(join(staging, 'ready'), `${version}\n`);
      try {
        renameSync(staging, target);
      } catch (error) {
        // Another test file unpacked the same version first: use theirs.
        if (!existsSync(join(target, 'ready'))) throw error;
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  // Its own fontconfig file: the fonts it ships plus the system's, so text renders with or without system fonts.
  const fontsConf = join(target, 'fonts.conf');
  if (!existsSync(fontsConf)) {
    writeFileSync(
      fontsConf,
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(target, 'fonts', 'fonts')}</dir>\n  <dir>/usr/share/fonts</dir>\n  <cachedir>${join(target, 'fonts-cache')}</cachedir>\n</fontconfig>\n`,
    );
  }
  // The NSS libraries it ships, so a machine without libnss3 runs it too.
  return { executablePath, source: 'bundled', env: { LD_LIBRARY_PATH: join(target, 'al2023', 'lib'), FONTCONFIG_FILE: fontsConf } };
}

export interface TestBrowser {
  context: BrowserContext;
  chosen: ChosenBrowser;
  close(): Promise<void>;
}

/** A fresh headless Chromium with an empty profile of its own (deleted on close). */
export async function launchBrowser(): Promise<TestBrowser> {
  const chosen = await findChromium();
  const profile = mkdtempSync(join(tmpdir(), 'l402-chromium-'));
  let context: BrowserContext;
  try {
    // A persistent context is how Playwright takes a user-data-dir.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chosen.executablePath,
      headless: true,
      acceptDownloads: true,
      args: CHROMIUM_ARGS,
      env: { ...process.env, ...chosen.env } as Record<string, string>,
    });
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw new Error(`Chromium (${chosen.source}: ${chosen.executablePath}) did not start: ${(error as Error).message}`);
  }
  return {
    context,
    chosen,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Where page tests keep their screenshots (gitignored). */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'test-artifacts', 'screenshots');
