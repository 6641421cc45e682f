// Validates AsyncAPI documents with the official AsyncAPI parser (@asyncapi/parser, with the
// Avro schema parser registered for Avro payloads), as `asyncapi validate` does.
//
//   node scripts/asyncapi/validate.mjs FILE...
//
// Prints every diagnostic and, for a valid document, its version and how many channels and
// operations it has. Exits 1 if any document has an error (or does not parse), 0 otherwise.
import { Parser, fromFile } from '@asyncapi/parser';
import { AvroSchemaParser } from '@asyncapi/avro-schema-parser';

const SEVERITY = ['error', 'warning', 'info', 'hint'];
const parser = new Parser();
parser.registerSchemaParser(AvroSchemaParser());
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node scripts/asyncapi/validate.mjs FILE...');
  process.exit(2);
}
let failed = false;
for (const file of files) {
  const { document, diagnostics } = await fromFile(parser, file).parse();
  for (const d of diagnostics) {
    console.log(`${file}: ${SEVERITY[d.severity]}: ${d.code}: ${d.message} (at /${d.path.join('/')})`);
  }
  if (!document || diagnostics.some((d) => d.severity === 0)) {
    console.log(`${file}: INVALID`);
    failed = true;
  } else {
    console.log(
      `${file}: valid AsyncAPI ${document.version()}: ${document.channels().length} channels, ` +
        `${document.operations().length} operations, ${document.messages().length} messages`,
    );
  }
}
process.exit(failed ? 1 : 0);
