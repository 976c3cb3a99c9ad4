// Every TypeScript snippet of the library's guide (packages/l402-paywall/README.md)
// and of the documentation pages listed below is type-checked against the
// library's sources, strictly, as a user's project would check it: if the
// guide shows an option, import or signature the library does not have, this
// fails and names the snippet. JSON blocks must parse.
//
// Each ```ts block is a module of its own in a virtual project at the
// repository's root (nothing is written to disk; packages resolve from
// node_modules). A block whose first line is a path comment
// (`// app/api/hello/route.ts`) is that file, so another block may import it
// (`@/lib/paywall`, as create-next-app's tsconfig maps `@/*`). Snippets may
// use the names of PREAMBLE without defining them; the guide says so where
// they are first used ("The snippets below share ...").
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks } from '../support/markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const library = join(root, 'packages/l402-paywall/src');

/** The documents whose snippets are checked. */
const DOCUMENTS = ['packages/l402-paywall/README.md', 'README.md', 'docs/rest-api.md', 'docs/deploy.md', 'docs/library-reference.md'];

/**
 * Snippets that use an API not yet in this branch: each entry names the
 * export. Such a snippet must fail only for want of that name; once it
 * compiles, this test fails until the entry is removed.
 */
const PENDING_EXPORTS: Array<{ name: string; reason: string }> = [];

/** Names the snippets may use without defining them (the guide names them before its framework snippets). */
const PREAMBLE = `
declare const provider: import('l402-paywall/lightning').LightningProvider;
declare const secret: string;
declare const handler: (request: Request) => Response | Promise<Response>;
`;

/** A snippet that must not compile: proves that a broken snippet is reported. */
const CANARY = `import { withL402 } from 'l402-paywall';\nexport const GET = withL402(handler, { priceSats: 10, provider, secret, noSuchOption: true });\n`;

interface Snippet {
  file: string;
  where: string;
  pending?: string;
}

function collect(): { files: Map<string, string>; snippets: Snippet[]; json: Array<{ where: string; code: string }> } {
  const base = join(root, '.readme-snippets');
  const files = new Map<string, string>();
  const snippets: Snippet[] = [];
  const json: Array<{ where: string; code: string }> = [];
  for (const document of DOCUMENTS) {
    let text: string;
    try {
      text = readFileSync(join(root, document), 'utf8');
    } catch {
      continue;
    }
    for (const block of codeBlocks(text)) {
      const where = `${document}:${block.line} (under "${block.heading}")`;
      if (block.lang === 'json') json.push({ where, code: block.code });
      if (block.lang !== 'ts' && block.lang !== 'typescript') continue;
      const named = /^\/\/ ([\w@[\].-]+(?:\/[\w@[\].-]+)*\.tsx?)\b/.exec(block.code)?.[1];
      let file = join(base, named ?? `${document.replace(/[^\w]/g, '_')}_${block.line}.ts`);
      if (files.has(file)) file = join(base, `${document.replace(/[^\w]/g, '_')}_${block.line}`, named ?? 'snippet.ts');
      // `export {}` makes every snippet a module, so snippets never share top-level names.
      files.set(file, `${block.code}\nexport {};\n`);
      const pending = PENDING_EXPORTS.find((entry) => new RegExp(`\\b${entry.name}\\b`).test(block.code))?.name;
      snippets.push({ file, where, ...(pending && { pending }) });
    }
  }
  files.set(join(base, 'preamble.d.ts'), PREAMBLE);
  files.set(join(base, 'canary.ts'), CANARY);
  return { files, snippets, json };
}

function typecheck(files: Map<string, string>): Map<string, string[]> {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    isolatedModules: true,
    resolveJsonModule: true,
    paths: {
      'l402-paywall': [join(library, 'index.ts')],
      'l402-paywall/*': [join(library, '*.ts')],
      '@/*': [join(root, '.readme-snippets/*')],
    },
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  const virtualDirectories = new Set([...files.keys()].flatMap((file) => file.split('/').map((_, i, parts) => parts.slice(0, i).join('/'))));
  host.fileExists = (name) => files.has(resolve(name)) || fileExists.call(host, name);
  host.directoryExists = (name) => virtualDirectories.has(resolve(name)) || (directoryExists?.call(host, name) ?? true);
  host.readFile = (name) => files.get(resolve(name)) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, onError, shouldCreate) => {
    const text = files.get(resolve(name));
    return text !== undefined ? ts.createSourceFile(name, text, language, true) : getSourceFile.call(host, name, language, onError, shouldCreate);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const byFile = new Map<string, string[]>();
  // The snippets' diagnostics only: those of every file of the program (the library's own sources, checked by
  // npm run typecheck) were computed and dropped, most of this file's time.
  const ofSnippets = [...files.keys()].flatMap((name) => {
    const source = program.getSourceFile(name);
    return source ? ts.getPreEmitDiagnostics(program, source) : [];
  });
  for (const diagnostic of ofSnippets) {
    const file = diagnostic.file ? resolve(diagnostic.file.fileName) : '';
    if (!files.has(file)) continue; // the library's own sources are checked by npm run typecheck
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    const message = `line ${line + 1} of the snippet: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    byFile.set(file, [...(byFile.get(file) ?? []), message]);
  }
  return byFile;
}

describe('the documentation snippets', () => {
  const { files, snippets, json } = collect();
  let diagnostics = new Map<string, string[]>();
  // One program for every snippet: the library's sources are read once (seconds on a busy machine).
  beforeAll(() => {
    diagnostics = typecheck(files);
  }, 300_000);

  it('the library guide has TypeScript snippets to check', () => {
    expect(snippets.filter((snippet) => snippet.where.startsWith('packages/l402-paywall/README.md')).length).toBeGreaterThan(10);
  });

  it('a snippet that does not compile is reported', () => {
    const canary = diagnostics.get(join(root, '.readme-snippets/canary.ts')) ?? [];
    expect(canary.join('\n')).toMatch(/noSuchOption/);
  });

  it('every TypeScript snippet type-checks against the library', () => {
    const failures = snippets.filter((snippet) => !snippet.pending && diagnostics.has(snippet.file));
    expect(failures.map((snippet) => `${snippet.where}\n  ${diagnostics.get(snippet.file)!.join('\n  ')}`).join('\n\n')).toBe('');
  });

  it('a snippet waiting for an export fails only for want of it (remove its PENDING_EXPORTS entry once it compiles)', () => {
    for (const snippet of snippets.filter((one) => one.pending)) {
      const errors = diagnostics.get(snippet.file) ?? [];
      expect(errors, `${snippet.where} compiles now: remove "${snippet.pending}" from PENDING_EXPORTS`).not.toEqual([]);
      for (const error of errors) expect(error, snippet.where).toContain(snippet.pending);
    }
  });

  it('every JSON block parses', () => {
    for (const block of json) expect(() => JSON.parse(block.code), block.where).not.toThrow();
  });
});
