import { route } from '../../lib/http/route.js';
import { serviceContext } from '../../lib/service/context.js';
import { demoBtcPrice } from '../../lib/service/demo.js';

export default route({
  GET: (request) => demoBtcPrice(serviceContext())(request),
});
