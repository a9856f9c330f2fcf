import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadPlan } from '/work/wt-shell/lib/plan/index.ts';
function* walk(d: string): Generator<string> { for (const f of readdirSync(d)) { const p = join(d, f); if (statSync(p).isDirectory()) { if (f !== 'node_modules') yield* walk(p); } else if (/\.(md|ya?ml|json)$/.test(f)) yield p; } }
for (const root of process.argv.slice(2)) for (const f of walk(root)) {
  let r: any;
  try { r = await loadPlan(f); } catch { continue; }
  for (const p of r.problems ?? []) if (p.code === 'unsafe-reference' || p.code === 'unsafe-env') console.log(f, p.message.slice(0, 200), p.line ?? '', p.column ?? '', p.pointer ?? '');
}
