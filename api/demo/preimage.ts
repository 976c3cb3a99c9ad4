import { readQuery } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { demoPreimage } from '../../lib/service/demo.js';
import { Query } from '../../lib/contracts/demo/preimage.js';

export default serviceRoute({
  GET: (request, deployment) => demoPreimage(deployment.context(), readQuery(request, Query).hash),
});
