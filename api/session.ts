// GET, DELETE /api/session: the dashboard login's first path, answered as /api/login is
// (lib/service/accounts/login-route.ts) for the scripts and clients that were told to read it.
import { loginRouteMethods } from '../lib/service/accounts/login-route.js';
import { serviceRoute } from '../lib/service/deployment.js';

export default serviceRoute(loginRouteMethods);
