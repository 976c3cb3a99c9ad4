// Types for the vendored module beside this file: the npm package's own,
// from node_modules/uqr. Only the type checker reads this (npm run
// typecheck); the browser never loads it.
export * from 'uqr';
