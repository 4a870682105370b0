import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The file changes of one `plugins add`, `upgrade` or `remove`, each recorded with how to undo
/// it, so that a step that fails (a check, a refused reload) puts every file back as it was:
/// plugins.lock, plugins.yaml's include line, the instance file, the installed folder. Each write
/// replaces its file whole (DurableFile), so a crash leaves each file old or new; the order of the
/// steps (files first, then the lock, then the instance file) makes what a crash leaves harmless:
/// an installed folder the lock does not name, which the next add replaces.
/// Safe to share: not shared; one command owns it.
final class InstallTransaction {
    private var undo: [() -> Void] = []
    private var committed = false

    /// Writes `data` to `path` (whole), remembering what was there.
    func write(_ data: Data, to path: String) throws(PluginInstaller.Refusal) {
        let previous = FileManager.default.contents(atPath: path)
        do {
            try DurableFile.write(data, to: path, atomically: true)
        } catch {
            throw PluginInstaller.Refusal("\(path): cannot be written: \(error.localizedDescription)")
        }
        undo.append {
            if let previous {
                try? DurableFile.write(previous, to: path, atomically: true)
            } else {
                unlink(path)
            }
        }
    }

    /// Removes the file at `path`, remembering its content.
    func remove(file path: String) throws(PluginInstaller.Refusal) {
        guard let previous = FileManager.default.contents(atPath: path) else {
            throw PluginInstaller.Refusal("\(path): cannot be read")
        }
        guard unlink(path) == 0 else { throw PluginInstaller.Refusal("\(path): cannot be removed: \(String(cString: strerror(errno)))") }
        DurableFile.syncDirectory((path as NSString).deletingLastPathComponent)
        undo.append { try? DurableFile.write(previous, to: path, atomically: true) }
    }

    /// Records that `folder` was created by this change (removed on rollback).
    func created(folder: String) {
        undo.append { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// Undoes every recorded change, newest first (nothing after `commit`).
    func rollback() {
        guard !committed else { return }
        for step in undo.reversed() { step() }
        undo = []
    }

    /// Keeps the changes.
    func commit() {
        committed = true
        undo = []
    }
}
