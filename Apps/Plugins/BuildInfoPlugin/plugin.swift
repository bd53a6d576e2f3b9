import Foundation
import PackagePlugin

/// Writes `BuildInfo.swift` before every build of the target that uses it: the git commit the
/// tools are built from (`--version`, the relay's `build_info` metric). A prebuild command runs
/// `write-build-info.sh` with the system's shell; the file is rewritten only when its content
/// changes, so an unchanged commit recompiles nothing.
@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let script = context.package.directoryURL.appending(path: "Plugins/BuildInfoPlugin/write-build-info.sh")
        let repository = context.package.directoryURL.deletingLastPathComponent()
        return [
            .prebuildCommand(
                displayName: "Build info (git commit) for \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [script.path, repository.path, output.appending(path: "BuildInfo.swift").path],
                outputFilesDirectory: output)
        ]
    }
}
