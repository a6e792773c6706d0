// Finds database programs (db/query.ts Q<T>) that are made but never run. Calling a generator
// function runs nothing, and TypeScript does not warn, so a forgotten `yield*`, `await
// core.store.read(...)` or `store.write(...)` would silently skip a query. Flags:
// - a call whose result is a program, used as a statement on its own;
// - `yield program` without the star (the runner would get the program instead of a query);
// - a program tested as a value (`if (findTask(...))`, `!p`, `p && ...`): an object, always truthy.
// Run: bun scripts/check-programs.ts (test/lib/programs.test.ts runs it).
import * as ts from "typescript";
import { dirname, join, relative } from "node:path";

export function findUnrunPrograms(root = join(import.meta.dir, "..")): string[] {
  const configPath = join(root, "tsconfig.json");
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, dirname(configPath));
  const program = ts.createProgram(parsed.fileNames.filter((f) => f.includes("/src/")), parsed.options);
  const checker = program.getTypeChecker();
  const problems: string[] = [];

  const isProgram = (node: ts.Expression) => {
    const type = checker.getTypeAtLocation(node);
    const name = type.getSymbol()?.getName() ?? type.aliasSymbol?.getName();
    if (name !== "Generator") return false;
    // Q<T> = Generator<Op, T, unknown>: the yielded type is the query union.
    const args = checker.getTypeArguments(type as ts.TypeReference);
    const yielded = args[0] && checker.typeToString(args[0]);
    return !!yielded && /\bOp\b|sql: string/.test(yielded);
  };

  for (const file of program.getSourceFiles()) {
    if (file.isDeclarationFile || !file.fileName.includes("/src/")) continue;
    const where = (node: ts.Node) => {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      return `${relative(root, file.fileName)}:${line + 1}`;
    };
    const visit = (node: ts.Node) => {
      if (ts.isExpressionStatement(node)) {
        let e = node.expression;
        while (ts.isParenthesizedExpression(e)) e = e.expression;
        if (ts.isCallExpression(e) && isProgram(e)) problems.push(`${where(node)}: a program is made and not run: ${e.getText(file).slice(0, 80)}`);
      }
      if (ts.isYieldExpression(node) && !node.asteriskToken && node.expression && isProgram(node.expression)) {
        problems.push(`${where(node)}: yield of a program without *: ${node.getText(file).slice(0, 80)}`);
      }
      // A program is an object, always truthy: tested as a value, it was meant to be run.
      const tested = ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.ExclamationToken
        ? node.operand
        : ts.isIfStatement(node) || ts.isWhileStatement(node)
          ? node.expression
          : ts.isConditionalExpression(node)
            ? node.condition
            : ts.isBinaryExpression(node) && [ts.SyntaxKind.AmpersandAmpersandToken, ts.SyntaxKind.BarBarToken, ts.SyntaxKind.QuestionQuestionToken].includes(node.operatorToken.kind)
              ? node.left
              : undefined;
      const operands = ts.isBinaryExpression(node) && [ts.SyntaxKind.AmpersandAmpersandToken, ts.SyntaxKind.BarBarToken].includes(node.operatorToken.kind) ? [tested, node.right] : [tested];
      for (const e of operands) {
        if (e && ts.isCallExpression(e) && isProgram(e)) problems.push(`${where(node)}: a program is tested as a value, not run: ${e.getText(file).slice(0, 80)}`);
      }
      if (ts.isVoidExpression(node) && ts.isCallExpression(node.expression) && isProgram(node.expression)) {
        problems.push(`${where(node)}: a program is voided, not run: ${node.getText(file).slice(0, 80)}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return problems;
}

if (import.meta.main) {
  const problems = findUnrunPrograms();
  for (const p of problems) console.log(p);
  console.log(problems.length ? `${problems.length} program(s) not run` : "every program is run");
  process.exit(problems.length ? 1 : 0);
}
