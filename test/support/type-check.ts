import * as path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '../..');

/**
 * Type-checks a user script as if it were `test/unit/types/__user-script__.ts` (so it imports
 * the public API as `'../../../src'`), with the project's compiler options, and returns its
 * diagnostics as `TSnnnn line: message`. One program per call: a few seconds.
 */
export function diagnosticsOf(script: string): string[] {
  const configPath = path.join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (f) => ts.sys.readFile(f));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const file = path.join(root, 'test/unit/types/__user-script__.ts');
  const host = ts.createCompilerHost(parsed.options);
  const read = host.readFile.bind(host);
  host.readFile = (f) => (path.resolve(f) === file ? script : read(f));
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => path.resolve(f) === file || exists(f);
  const program = ts.createProgram([file], { ...parsed.options, noEmit: true }, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => {
    const line =
      d.file !== undefined && d.start !== undefined
        ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
        : 0;
    return `TS${d.code} ${line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}
