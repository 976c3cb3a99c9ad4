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
const LIBRARY = '^packages/l402-paywall/src/';

/**
 * A folder of the library may import only the folders in `may` (and npm packages); `alsoFiles` are single files it may import too.
 * @param {string} folder @param {string[]} may @param {string} comment @param {string[]} [alsoFiles]
 */
function libraryLayer(folder, may, comment, alsoFiles = []) {
  return [
    {
      name: `library-layer-${folder.replace('/', '-')}`,
      comment,
      severity: 'error',
      from: { path: `${LIBRARY}${folder}/` },
      to: { path: LIBRARY, pathNot: `${LIBRARY}(?:(?:${may.join('|')})/${alsoFiles.length ? `|${alsoFiles.join('|')}` : ''})` },
    },
  ];
}
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
    // --- The library's layers (packages/l402-paywall/src), issue 36 ---------------------------
    // entries (src/*.ts) -> adapters, client, cli, managed -> paywall/ (options to schemes) ->
    // schemes/* -> core/ -> crypto/, util/. The core knows the scheme interface, never a scheme;
    // schemes sit beside each other (charge and session may use payment, the shared wire codecs;
    // l402 uses no other). One rule per folder: what it may import, everything else is refused.
    ...libraryLayer('crypto', ['crypto', 'util'], 'Shared crypto sits below everything: it imports no other part of the library.'),
    ...libraryLayer('util', ['util'], 'Plain data structures: they import no other part of the library.'),
    ...libraryLayer(
      'core',
      ['core', 'crypto', 'util'],
      'The scheme-neutral core (pipeline, scheme interface, refusals, replay store) knows no scheme, adapter, entry or event builder.',
    ),
    ...libraryLayer('schemes/l402', ['schemes/l402', 'core', 'crypto', 'util'], 'L402 is a scheme on the core and crypto: it uses no other scheme.'),
    ...libraryLayer(
      'schemes/payment',
      ['schemes/payment', 'core', 'crypto', 'util', 'http'],
      "The IETF Payment scheme's wire codecs sit on the core and crypto (and the header grammar in http/): no scheme of their own.",
    ),
    ...libraryLayer(
      'schemes/charge',
      ['schemes/charge', 'schemes/payment', 'core', 'crypto', 'util'],
      'The charge uses the Payment wire, the core and crypto only.',
    ),
    ...libraryLayer(
      'schemes/session',
      ['schemes/session', 'schemes/payment', 'core', 'crypto', 'util', 'lightning', 'http'],
      'The session uses the Payment wire, the core, crypto, lightning/ (its refunds decode and pay invoices) and http/ (metering reads bodies bounded): never the charge or L402.',
    ),
    ...libraryLayer(
      'paywall',
      ['paywall', 'schemes', 'core', 'crypto', 'util'],
      'The assembly turns options into the core and its schemes: nothing above it (adapters, entries, the client) and no event builder.',
      ['events/types\\.ts'],
    ),
    ...libraryLayer(
      'proxy',
      ['proxy', 'adapters', 'paywall', 'schemes', 'core', 'crypto', 'util', 'http', 'lightning', 'events'],
      'The proxy is an adapter of the core (beside adapters/, on their gate and serve step): never the client, the CLI or managed mode.',
    ),
    {
      name: 'paywall-imports-events-types-only',
      comment: 'What the assembly takes from events/types.ts (the options name the events) is types: nothing of it is loaded with the core.',
      severity: 'error',
      from: { path: `${LIBRARY}paywall/` },
      to: { path: `${LIBRARY}events/types\\.ts$`, dependencyTypesNot: ['type-only'] },
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
