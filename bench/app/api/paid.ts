import { route } from '../../../lib/http/route.js';
import { paid } from './_shared.js';

export default route({ GET: paid });
