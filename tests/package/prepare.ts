// globalSetup of the `package` project (vitest.config.ts): when a run includes
// tests/package/packed.test.ts, its slow preparation starts at once in vitest's
// main process (npm and next are child processes): `npm pack`, then every
// fixture installed from the tarball in parallel, then the Next.js production
// build. vitest runs one test file at a time on this 2-core machine, and the
// package project runs last (sequence.groupOrder), so all of this happens
// beside the other suites instead of after them. Nothing is awaited here:
// the suite waits for each step's recorded result (tests/support/packed.ts).
// It runs niced, so the suites beside it keep the CPU they need.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { cleanEnv, installFixture, packLibrary, readmeRecipe, recordStep, run, stepTimings } from '../support/packed.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the preparation works and records its steps. */
    packedWork: string;
    /** The L402 secret the Next.js app is started with (it is built without one). */
    packedSecret: string;
  }
}

export const PACKED_FIXTURES = ['packed-consumer', 'packed-node-http', 'packed-express', 'packed-hono', 'packed-runtimes', 'packed-next'] as const;

/**
 * A build has no runtime settings (a CI job, Vercel's build step): `next build`
 * runs without L402_SECRET and managed mode's LIGHTNING_ADDRESS and
 * L402_SERVICE_URL, evaluating every route module that calls withL402;
 * `next start` gets the secret alone (packed.test.ts).
 */
export function nextBuildEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv();
  for (const setting of ['L402_SECRET', 'LIGHTNING_ADDRESS', 'L402_SERVICE_URL']) delete env[setting];
  return env;
}

export default function setup(project: TestProject): () => Promise<void> {
  const startedAt = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'l402-packed-'));
  const secret = [...crypto.getRandomValues(new Uint8Array(32))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  project.provide('packedWork', work);
  project.provide('packedSecret', secret);

  const packed = recordStep(work, 'pack', Promise.resolve(), () => packLibrary(join(work, 'pack'), { lowPriority: true }));
  const installs = PACKED_FIXTURES.map((fixture) =>
    recordStep(work, `install-${fixture}`, packed, ({ tarball }) =>
      // The Next.js app gets the package README's recipe written into it, snippet by snippet, as a user pastes it.
      installFixture(fixture, tarball, join(work, fixture), { lowPriority: true, ...(fixture === 'packed-next' && { files: readmeRecipe() }) }),
    ),
  );
  const nextBuild = recordStep(work, 'next-build', installs[PACKED_FIXTURES.indexOf('packed-next')]!, async (app) => {
    await run(process.execPath, ['node_modules/next/dist/bin/next', 'build'], { cwd: app, env: nextBuildEnv(), lowPriority: true });
    return app;
  });
  const everything = Promise.allSettled([packed, ...installs, nextBuild]);

  return async () => {
    // Nothing may still be writing into the directory when it goes.
    await everything;
    console.log(
      `packed-tarball preparation (beside the other suites): ${stepTimings(work).join(', ')}; ${((Date.now() - startedAt) / 1000).toFixed(0)} s from the start of the run to the end of the suite`,
    );
    rmSync(work, { recursive: true, force: true });
  };
}
