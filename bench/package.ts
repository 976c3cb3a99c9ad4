// What installing the library costs its users: the packed tarball, the packages
// an install into an empty project adds, and the core a cold start loads
// (withL402 and verification, bundled with esbuild, minified and gzipped).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { coreBundleSize, directoryBytes, installFixture, installedPackages, packLibrary } from '../tests/support/packed.js';

export interface PackageBench {
  tarballBytes: number;
  /** Every package the install put in node_modules, the library included. */
  packagesAdded: string[];
  /** node_modules on disk after that install. */
  installedBytes: number;
  coreMinifiedBytes: number;
  coreGzippedBytes: number;
}

export async function benchPackage(): Promise<PackageBench> {
  const work = mkdtempSync(join(tmpdir(), 'l402-bench-package-'));
  try {
    const packed = await packLibrary(join(work, 'pack'));
    // tests/fixtures/packed-consumer is an empty project: a package.json with no dependencies.
    const project = await installFixture('packed-consumer', packed.tarball, join(work, 'empty-project'));
    const core = await coreBundleSize(project);
    return {
      tarballBytes: packed.bytes,
      packagesAdded: installedPackages(project),
      installedBytes: directoryBytes(join(project, 'node_modules')),
      coreMinifiedBytes: core.minifiedBytes,
      coreGzippedBytes: core.gzippedBytes,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function printPackageBench(bench: PackageBench): void {
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  console.log('\nThe library as installed (npm pack, then npm install of the tarball into an empty project):');
  console.log(`  tarball        ${kb(bench.tarballBytes)}`);
  console.log(`  packages added ${bench.packagesAdded.length}   (target <= 15: ${bench.packagesAdded.join(', ')})`);
  console.log(`  on disk        ${kb(bench.installedBytes)} in node_modules`);
  console.log(
    `  core           ${kb(bench.coreGzippedBytes)} minified+gzipped, ${kb(bench.coreMinifiedBytes)} minified   (withL402 + verification, esbuild for the browser; target <= 25 KB)`,
  );
  if (bench.packagesAdded.length > 15 || bench.coreGzippedBytes > 25 * 1024) process.exitCode = 1;
}
