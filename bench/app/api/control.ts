import { route } from '../../../lib/http/route.js';
import { control } from './_shared.js';

export default route({ GET: control });
