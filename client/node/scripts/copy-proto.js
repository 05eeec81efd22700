'use strict';
// `npm pack` / `npm publish` (prepack): copies the repository's
// proto/msgq/v1/messaging.proto into this package's proto/ so a packed
// tarball carries its own copy (lib/proto.js looks there before the
// repository). Not needed in a checkout.
const fs = require('node:fs');
const path = require('node:path');

const from = path.join(__dirname, '..', '..', '..', 'proto', 'msgq', 'v1');
const to = path.join(__dirname, '..', 'proto', 'msgq', 'v1');
fs.mkdirSync(to, { recursive: true });
fs.copyFileSync(path.join(from, 'messaging.proto'),
                path.join(to, 'messaging.proto'));
console.log(`copied messaging.proto to ${to}`);
