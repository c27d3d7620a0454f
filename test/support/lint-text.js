// Lints code as files of the repository with its own eslint.config.mjs, less the type-checked
// rules (the import fences need no types; a program would take seconds), for
// test/unit/lint-fences.test.ts: a child process, since ESLint loads its config with import(),
// which Jest's module system refuses.
//
//   node lint-text.js < [{"file": "src/…/x.ts", "code": "…"}, …]
//     prints, for each entry in order, [{"ruleId", "message"}, …]
const path = require('node:path');
const { ESLint } = require('eslint');
const tseslint = require('typescript-eslint');

const ROOT = path.resolve(__dirname, '../..');

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const eslint = new ESLint({ cwd: ROOT, overrideConfig: [tseslint.configs.disableTypeChecked] });
  const out = [];
  for (const { file, code } of cases) {
    const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
    out.push(result.messages.map(({ ruleId, message }) => ({ ruleId, message })));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
