import { serviceRoute } from '../../lib/service/deployment.js';
import { demoBtcPrice } from '../../lib/service/demo.js';

export default serviceRoute({
  GET: (request, deployment) => demoBtcPrice(deployment.context())(request),
});
