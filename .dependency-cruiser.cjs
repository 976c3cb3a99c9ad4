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
    // Resolves `.js` specifiers to the .ts sources and `l402-paywall/*` to the library's src/, as tsc does.
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
  },
};
