import { serviceRoute } from '../../lib/service/deployment.js';
import { demoStream } from '../../lib/service/demo.js';

export default serviceRoute({
  GET: (request, deployment) => demoStream(deployment.context())(request),
});
