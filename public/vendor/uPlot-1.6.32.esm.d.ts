// Types for the vendored ES module build beside this file (whose default
// export is the uPlot class): the npm package's own, from node_modules/uplot.
// Only the type checker reads this (npm run typecheck); the browser never loads it.
import uPlot from 'uplot';

export default uPlot;
