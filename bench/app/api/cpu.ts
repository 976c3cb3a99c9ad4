// Server CPU time so far (user + system, microseconds): CPU per request is
// steadier than requests per second on a shared machine.
import { route } from '../../../lib/http/route.js';

export default route({
  GET: () => {
    const { user, system } = process.cpuUsage();
    return Response.json({ micros: user + system });
  },
});
