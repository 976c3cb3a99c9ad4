// POST /api/mcp: the demo sold as paid MCP tools on stateless Streamable HTTP (lib/service/demo-mcp.ts).
import { serviceRoute } from '../lib/service/deployment.js';
import { demoMcp } from '../lib/service/demo-mcp.js';

export default serviceRoute({
  POST: (request, deployment) => demoMcp(deployment.context(), request),
});
