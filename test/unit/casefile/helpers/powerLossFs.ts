import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { nodeFs, type CaseFileFs } from "../../../../src/casefile/caseFileFs";

/**
 * A CaseFileFs for tests that does every call for real and keeps, beside it, what a power loss
 * would leave: per file, the bytes its last fsync made durable; per folder, the names (creates,
 * renames, removals) its last fsyncDir made durable. `crashAt` picks the call at which the power
 * goes: that call and every later one throw PowerLoss (a write at the crash point lands half its
 * bytes first, as a torn write does). `materialize` then writes the files a reboot would find into
 * another folder, to be opened by a store on the real file system.
 *
 * The model is the one POSIX promises and ext4/xfs deliver on a power cut: data not fsync'd may
 * be lost ("durable" mode) or may have reached the disk anyway ("flushed" mode); a name not made
 * durable by an fsync of its folder may point at the old file or at nothing.
 */

export class PowerLoss extends Error {
  constructor(readonly at: number) {
    super(`power lost at file-system call ${at}`);
  }
}

export interface FsCall {
  op: "open" | "write" | "fsync" | "ftruncate" | "close" | "rename" | "remove" | "fsyncDir";
  /** The file (or folder, for fsyncDir) the call is about, as a base name. */
  file: string;
  detail?: string;
}

interface Node {
  /** Where the file is now; undefined once removed or replaced by a rename. */
  path: string | undefined;
  durable: Buffer;
  /** Its bytes when it stopped being reachable by name (a rename over it, a removal). */
  lastBytes?: Buffer;
}

export class PowerLossFs implements CaseFileFs {
  readonly calls: FsCall[] = [];
  /** The call (index into `calls`) at which the power goes; undefined: never. */
  crashAt: number | undefined;
  private dead = false;
  private readonly current = new Map<string, Node>();
  private readonly durableNames = new Map<string, Node>();
  private readonly fds = new Map<number, Node>();

  constructor(private readonly inner: CaseFileFs = nodeFs) {}

  get crashed(): boolean {
    return this.dead;
  }

  open(p: string, flags: string): number {
    this.step({ op: "open", file: path.basename(p), detail: flags });
    const existing = this.nodeAt(p);
    const fd = this.inner.open(p, flags);
    let node = existing;
    if (!node) {
      node = { path: p, durable: Buffer.alloc(0) };
      this.current.set(p, node);
    }
    this.fds.set(fd, node);
    return fd;
  }

  write(fd: number, buf: Uint8Array, offset: number, length: number): number {
    const node = this.fds.get(fd);
    const at = this.calls.length;
    if (this.crashAt === at && !this.dead && length > 1) {
      // A torn write: half the bytes reach the file before the power goes.
      this.inner.write(fd, buf, offset, Math.floor(length / 2));
    }
    this.step({ op: "write", file: base(node), detail: String(length) });
    return this.inner.write(fd, buf, offset, length);
  }

  fsync(fd: number): void {
    const node = this.fds.get(fd);
    this.step({ op: "fsync", file: base(node) });
    this.inner.fsync(fd);
    if (node?.path !== undefined) node.durable = readFileSync(node.path);
  }

  ftruncate(fd: number, length: number): void {
    this.step({ op: "ftruncate", file: base(this.fds.get(fd)), detail: String(length) });
    this.inner.ftruncate(fd, length);
  }

  close(fd: number): void {
    // A dead process's descriptors are closed by the kernel: closing is no durability event.
    if (!this.dead) this.step({ op: "close", file: base(this.fds.get(fd)) });
    this.fds.delete(fd);
    this.inner.close(fd);
  }

  rename(from: string, to: string): void {
    this.step({ op: "rename", file: path.basename(from), detail: path.basename(to) });
    const node = this.nodeAt(from);
    const replaced = this.nodeAt(to);
    if (replaced) replaced.lastBytes = readFileSync(to);
    this.inner.rename(from, to);
    if (replaced) replaced.path = undefined;
    this.current.delete(from);
    if (node) {
      node.path = to;
      this.current.set(to, node);
    }
  }

  remove(p: string): void {
    this.step({ op: "remove", file: path.basename(p) });
    const node = this.nodeAt(p);
    if (node) node.lastBytes = readFileSync(p);
    this.inner.remove(p);
    if (node) node.path = undefined;
    this.current.delete(p);
  }

  fsyncDir(dir: string): void {
    this.step({ op: "fsyncDir", file: path.basename(dir) });
    this.inner.fsyncDir(dir);
    for (const p of [...this.durableNames.keys()]) if (path.dirname(p) === dir) this.durableNames.delete(p);
    for (const [p, node] of this.current) if (path.dirname(p) === dir) this.durableNames.set(p, node);
  }

  /**
   * Writes into `into` the files of `dir` a reboot after the crash would find, under their base
   * names: "durable" keeps only what was fsync'd, "flushed" keeps every byte written (the page
   * cache happened to reach the disk), names as durable as their folder's last fsync in both.
   */
  materialize(dir: string, into: string, mode: "durable" | "flushed"): string[] {
    mkdirSync(into, { recursive: true });
    const written: string[] = [];
    for (const [p, node] of this.durableNames) {
      if (path.dirname(p) !== dir) continue;
      let bytes = node.durable;
      if (mode === "flushed") {
        bytes = node.path !== undefined && existsSync(node.path) ? readFileSync(node.path) : (node.lastBytes ?? node.durable);
      }
      writeFileSync(path.join(into, path.basename(p)), bytes);
      written.push(path.basename(p));
    }
    return written.sort();
  }

  private step(call: FsCall): void {
    const at = this.calls.length;
    if (this.dead) throw new PowerLoss(at);
    this.calls.push(call);
    if (this.crashAt === at) {
      this.dead = true;
      throw new PowerLoss(at);
    }
  }

  /** The file at `p`, adopted as already durable if it existed before this layer saw it. */
  private nodeAt(p: string): Node | undefined {
    let node = this.current.get(p);
    if (!node && existsSync(p)) {
      node = { path: p, durable: readFileSync(p) };
      this.current.set(p, node);
      this.durableNames.set(p, node);
    }
    return node;
  }
}

function base(node: Node | undefined): string {
  return node?.path !== undefined ? path.basename(node.path) : "(unlinked)";
}
