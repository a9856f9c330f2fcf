import { placeShellReferences } from '/work/wt-shell/lib/plan/shell/index.ts';
for (const c of process.argv.slice(2)) {
  console.log('## ' + c);
  for (const p of placeShellReferences(c)) console.log(`  ${p.raw} ${p.line}:${p.column} ${p.placement ?? 'REFUSED: ' + p.refused}`);
}
