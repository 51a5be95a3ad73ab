import Foundation
import PackagePlugin

/// Writes `GitCommit.swift` before every build of the target that uses it: Herald's version, read from
/// the package's `VERSION` file (the one place it is written; ops/package, openapi.yaml and the git tag
/// use the same), and the commit the build is made from (`-dirty` when tracked files have changed,
/// `unknown` outside a git checkout). The file is rewritten only when one of them changed, so an
/// unchanged tree does not recompile.
@main
struct GitCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = """
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
              commit="$commit-dirty"
            fi
            version=$(tr -d ' \\n' < "$1/VERSION") || exit 1
            mkdir -p "$2"
            printf '/// Written by the GitCommit build plugin.\\npackage let gitCommit = "%s"\\npackage let heraldVersion = "%s"\\n' \\
              "$commit" "$version" > "$2/GitCommit.swift.new"
            if cmp -s "$2/GitCommit.swift.new" "$2/GitCommit.swift"; then rm "$2/GitCommit.swift.new"
            else mv "$2/GitCommit.swift.new" "$2/GitCommit.swift"; fi
            """
        return [.prebuildCommand(displayName: "Reading the git commit", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", script, "git-commit", context.package.directoryURL.path, output.path],
                                 outputFilesDirectory: output)]
    }
}
