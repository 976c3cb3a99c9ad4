// The import graph's rules, checked by `npm run lint` (`npm run lint:imports`):
// no import loops anywhere in the code that ships or runs (packages/, lib/,
// api/, scripts/), the library's layers point one way (docs/architecture.md
// "Parts and dependency direction"), and no api/ file imports another.
//
// Type-only imports count. They are erased at compile time, so a loop of them
// cannot break module initialisation, but it ties the modules together all the
// same: neither can be read, tested or moved without the other, and the day one
// of its imports carries a value the loop is a runtime one that nothing flags.
// Dynamic import() counts too: a lazily loaded module is still a dependency.
const { readdirSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

// What code outside a package may import of it: its public entries, each
// src/<entry>.ts behind a subpath of its package.json "exports" ('.' is
// index), and only through the package's name (tsconfig.json's paths point
// the name at those sources, so such an import is 'aliased-tsconfig').
const packagesDir = join(__dirname, 'packages');
const publicEntries = readdirSync(packagesDir).flatMap((name) => {
  const { exports = {} } = JSON.parse(readFileSync(join(packagesDir, name, 'package.json'), 'utf8'));
  return Object.keys(exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => `^packages/${name}/src/${subpath === '.' ? 'index' : subpath.slice(2)}\\.ts$`);
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-import-loop',
      comment: 'Modules that import each other, directly or through others: move what both need to a module of its own.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-no-events',
      comment:
        'The core (l402/) knows nothing of the event builder: the entry points hand it in (events/paywall.ts). ' +
        'It names the events it reports in its options, as types from events/types.ts, the format, which imports nothing.',
      severity: 'error',
      from: { path: '^packages/l402-paywall/src/l402/' },
      to: { path: '^packages/l402-paywall/src/events/', pathNot: '^packages/l402-paywall/src/events/types\\.ts$' },
    },
    {
      name: 'core-imports-events-types-only',
      comment: 'What the core takes from events/types.ts is types: nothing of it is loaded with the core.',
      severity: 'error',
      from: { path: '^packages/l402-paywall/src/l402/' },
      to: { path: '^packages/l402-paywall/src/events/types\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'api-imports-no-api',
      comment:
        'An api/ file is a function of its own: it imports lib/, never another api/ file. What two routes share, or what ' +
        'api/openapi.json.ts describes (request and answer schemas), lives in lib/ (lib/contracts/<route>.ts).',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^api/' },
    },
    // Each package is used from outside as its users use it (issue 36): by its
    // name and public entries. Its own tests live in its tests/ folder and may
    // import anything of it; the service's tests, scripts, pages, benchmarks
    // and the other packages may not reach into its src/.
    {
      name: 'outside-uses-public-entries',
      comment:
        "Outside a package, import only its public entries (package.json exports): what the code needs of a module that is no entry is the package's own test (move it to packages/<pkg>/tests/), or it belongs in an entry.",
      severity: 'error',
      from: { pathNot: '^packages/' },
      to: { path: '^packages/[^/]+/src/', pathNot: publicEntries },
    },
    {
      name: 'outside-imports-by-name',
      comment: "Outside a package, import its entries by the package's name (`l402-paywall/lightning`), never by a path into its src/.",
      severity: 'error',
      from: { pathNot: '^packages/' },
      to: { path: '^packages/[^/]+/src/', dependencyTypesNot: ['aliased-tsconfig'] },
    },
    {
      name: 'packages-use-public-entries',
      comment: "A package imports another one as any user does: its public entries, by the package's name.",
      severity: 'error',
      from: { path: '^packages/([^/]+)/' },
      to: { path: '^packages/[^/]+/src/', pathNot: ['^packages/$1/', ...publicEntries] },
    },
    {
      name: 'packages-import-by-name',
      comment: "A package imports another one's entries by the package's name, never by a path into its src/.",
      severity: 'error',
      from: { path: '^packages/([^/]+)/' },
      to: { path: '^packages/[^/]+/src/', pathNot: '^packages/$1/', dependencyTypesNot: ['aliased-tsconfig'] },
    },
    {
      name: 'library-imports-no-service',
      comment: 'The library is built from plain options: it imports nothing of the service.',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^(lib|api|scripts)/' },
    },
  ],
  options: {
    // Keep `import type` (erased by the compiler) in the graph: see above.
    tsPreCompilationDeps: true,
    // The pages (public/) import the library's types in JSDoc (`@typedef {import('l402-paywall/mpp').X}`): those count too.
    detectJSDocImports: true,
    // Resolves `.js` specifiers to the .ts sources and `l402-paywall/*` to the library's src/, as tsc does.
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
  },
};
