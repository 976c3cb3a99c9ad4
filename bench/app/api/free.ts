import { route } from '../../../lib/http/route.js';
import { free } from './_shared.js';

export default route({ GET: free });
