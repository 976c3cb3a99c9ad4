import { readQuery } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { ApisQuery } from '../lib/service/directory/entry.js';
import { demoListedOnce } from '../lib/service/directory/demo-entry.js';
import { listApisJson } from '../lib/service/directory/listing.js';

// GET /api/apis.json[?category=]: the directory for agents, newest first, the
// service's own demo among them when its public URL is configured.
// Shared caches may keep it a minute: a new entry shows up within 60 s.
export default serviceRoute({
  async GET(request, deployment) {
    const started = performance.now();
    const { category } = readQuery(request, ApisQuery);
    const ctx = deployment.context();
    await demoListedOnce(ctx);
    const listing = await listApisJson(ctx, category);
    return new Response(listing.json, {
      headers: {
        'Content-Type': 'application/json',
        'Cache-Control': 'public, max-age=60, s-maxage=60',
        'Server-Timing': `app;dur=${(performance.now() - started).toFixed(1)}`,
      },
    });
  },
});
