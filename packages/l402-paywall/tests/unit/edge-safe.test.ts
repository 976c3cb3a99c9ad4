// Every entry point the library's README calls edge-safe must bundle for a browser with
// no Node built-in anywhere in its import graph (its dependencies included):
// that is what Vercel Edge, Cloudflare Workers and browsers load.
import { build, type Plugin } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
export const EDGE_SAFE_ENTRIES = [
  'index',
  'lightning',
  'sessions',
  'backends',
  'upstash',
  'redis',
  'express',
  'hono',
  'managed',
  'nwc',
  'client',
  'events',
  'mpp',
  'mcp-tools',
  'proxy',
] as const;

/** Records every import of a Node built-in instead of letting esbuild fail on the first. */
function nodeBuiltins(found: string[]): Plugin {
  return {
    name: 'node-builtins',
    setup(b) {
      b.onResolve({ filter: /^node:|^(fs|path|crypto|http|https|net|tls|stream|events|zlib|buffer|url|util|os|dns|child_process|worker_threads)$/ }, (args) => {
        found.push(`${args.path} (from ${args.importer.replace(SRC, 'src/')})`);
        return { path: args.path, external: true };
      });
    },
  };
}

describe('edge-safe entry points import no Node built-in', () => {
  for (const entry of EDGE_SAFE_ENTRIES) {
    it(`l402-paywall${entry === 'index' ? '' : `/${entry}`}`, async () => {
      const found: string[] = [];
      const result = await build({
        entryPoints: [`${SRC}${entry}.ts`],
        bundle: true,
        write: false,
        platform: 'browser',
        format: 'esm',
        logLevel: 'silent',
        // nwc loads `ws` only on a runtime without a global WebSocket (Node 20); browsers and workers have one.
        external: ['ws'],
        plugins: [nodeBuiltins(found)],
      });
      expect(found).toEqual([]);
      expect(result.errors).toEqual([]);
      expect(result.outputFiles[0]!.text.length).toBeGreaterThan(0);
    });
  }

  it('the Node entry is told apart: l402-paywall/node does import Node built-ins', async () => {
    const found: string[] = [];
    await build({
      entryPoints: [`${SRC}node.ts`],
      bundle: true,
      write: false,
      platform: 'browser',
      format: 'esm',
      logLevel: 'silent',
      plugins: [nodeBuiltins(found)],
    });
    expect(found.length).toBeGreaterThan(0);
  });
});
