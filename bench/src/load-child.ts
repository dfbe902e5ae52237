/** A load run in a process of its own: options as JSON in the first argument, the result as JSON out. */
import { type PlainLoadOptions, load } from './load.js';

const opts = JSON.parse(process.argv[2] ?? '{}') as PlainLoadOptions;
process.stdout.write(JSON.stringify(await load(opts)));
