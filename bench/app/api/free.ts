import { route } from '../../../lib/http/route.js';
import { answer } from './_shared.js';

export default route({ GET: answer });
