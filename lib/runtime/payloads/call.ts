/**
 * The resolved call a step or rollback made, as TASK_STARTED and ROLLBACK_STARTED record it: the
 * tool, every run-time value it was given (secrets redacted) and what the tool received. For a
 * shell command, `ran.command` is the approved text with each reference replaced by the
 * environment variable that holds its value (lib/runtime/secrets/shell-command.ts
 * `fillShellCommand`): an auditor recomputes it from the approved plan and these values.
 */
import { z } from 'zod';

/** One run-time value: the reference as written, its value as text, and the variable it reached a command through. */
export const CallValueSchema = z.object({
  /** E.g. `${steps.meta.tag}`. */
  ref: z.string(),
  /** The value as text (non-strings as JSON); `***` for a secret. */
  value: z.string(),
  /** `PLANGATE_VALUE_n` when the value reached a shell command through its environment. */
  env: z.string().optional(),
});
export type CallValue = z.infer<typeof CallValueSchema>;

/** What the shell tool received: the command bash ran, the names of the variables it was given, its directory. */
export const ShellRanSchema = z.object({
  command: z.string(),
  env: z.array(z.string()),
  cwd: z.string().optional(),
});
export type ShellRan = z.infer<typeof ShellRanSchema>;

export const CallSchema = z
  .object({
    tool: z.string().min(1),
    values: z.array(CallValueSchema),
    /** The shell tool: ShellRanSchema; any other tool: its args with the values filled in (redacted). */
    ran: z.record(z.string(), z.unknown()),
  })
  .superRefine((call, ctx) => {
    if (call.tool !== 'shell') return;
    const ran = ShellRanSchema.safeParse(call.ran);
    for (const issue of ran.error?.issues ?? [])
      ctx.addIssue({ code: 'custom', message: issue.message, path: ['ran', ...issue.path] });
  });
export type Call = z.infer<typeof CallSchema>;
