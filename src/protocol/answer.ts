/* No zod here: the extension's entry imports this and stays small (esbuild.mjs loads zod lazily). */

/**
 * The answer an option stands for, in the default approval shape (engine ApprovalAnswer):
 * approve and reject are decisions, any other option is a choice; a comment goes with it when
 * given. Shared by the Requests view's quick pick and the inspector's request buttons, so both
 * record the same answer for the same choice.
 */
export function answerFromOption(option: string, comment: string): { decision: string; choice?: string; comment?: string } {
  const base = option === "approve" || option === "reject" ? { decision: option } : { decision: "choose", choice: option };
  return comment.trim() ? { ...base, comment: comment.trim() } : base;
}
