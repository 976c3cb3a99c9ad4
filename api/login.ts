// GET, DELETE /api/login: the dashboard login (lib/service/accounts/login-route.ts).
import { loginRouteMethods } from '../lib/service/accounts/login-route.js';
import { serviceRoute } from '../lib/service/deployment.js';

export default serviceRoute(loginRouteMethods);
