import Core
import Foundation

/// `herald-load compare A.json B.json`: run B against run A, per method.
enum CompareCommand {
    static let usage = """
        herald-load compare: compares two fleet results (--json files of herald-load fleet or merge), per method:
        rate, p50, p95, p99 and errors of A and B, with B's ratio to A (errors: the difference in percentage
        points), marking with ! each figure in which B is worse than A.

        Usage: herald-load compare A.json B.json [--html FILE.html] [--tolerance PERCENT]

          --html FILE.html     also write both runs into one self-contained page: the table and the
                               per-second series of A and B laid over each other.
          --tolerance PERCENT  how much worse counts as a regression: rate lower, or a percentile higher,
                               by more than PERCENT (default 10); errors count when their share grows by
                               0.1 percentage point or more.

        Exit status: 0 no regression, 1 a regression is marked (or the page could not be written), 2 a bad
        command line or a file that is not a herald-load result.
        """

    static func main(_ arguments: [String]) -> Int32 {
        var files: [String] = []
        var htmlPath: String?
        var tolerance = 0.10
        var cursor = ArgumentCursor(arguments)
        do throws(FleetOptions.Problem) {
            while cursor.next() {
                switch cursor.name {
                case "--help", "-h":
                    print(usage)
                    return 0
                case "--html":
                    htmlPath = try FleetOptions.path(cursor.name, try cursor.value())
                case "--tolerance":
                    let text = try cursor.value()
                    guard let percent = Double(text.hasSuffix("%") ? String(text.dropLast()) : text), percent >= 0, percent < 1000 else {
                        throw FleetOptions.Problem("--tolerance must be a percentage from 0, such as 10, got '\(text)'")
                    }
                    tolerance = percent / 100
                case let name where name.hasPrefix("-") && name.count > 1:
                    throw FleetOptions.Problem("unknown option \(cursor.argument) (see herald-load compare --help)")
                default:
                    files.append(cursor.argument)
                }
            }
            guard files.count == 2 else { throw FleetOptions.Problem("two result files are needed (A.json B.json), got \(files.count)") }
            if let htmlPath, let problem = FleetCommand.unwritable(htmlPath) { throw FleetOptions.Problem(problem) }
        } catch {
            return fail(error.description)
        }
        let a: FleetResult, b: FleetResult
        do throws(ResultFile.Problem) {
            a = try ResultFile.read(files[0])
            b = try ResultFile.read(files[1])
        } catch {
            return fail(error.description)
        }
        let comparison = RunComparison(a, b, tolerance: tolerance)
        print(comparison.render(nameA: files[0], nameB: files[1]))
        var status: Int32 = comparison.hasRegression ? 1 : 0
        if let htmlPath {
            do {
                try Data(ComparisonReport.render(comparison, nameA: files[0], nameB: files[1]).utf8).write(to: URL(fileURLWithPath: htmlPath))
            } catch {
                FileHandle.standardError.write(Data("herald-load compare: cannot write \(htmlPath): \(error.localizedDescription)\n".utf8))
                status = 1
            }
        }
        return status
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("herald-load compare: \(message)\n".utf8))
        return 2
    }
}

/// `herald-load merge A.json B.json …`: the segments of one fleet as one run.
enum MergeCommand {
    static let usage = """
        herald-load merge: combines the --json results of one fleet's segments (herald-load fleet --segment i/n,
        one process per part) into the result of the whole fleet: counts added, latency histograms added
        bucket by bucket (percentiles of all requests together, not averages), per-second series aligned by
        the second each part started at. Prints the summary as herald-load fleet does.

        Usage: herald-load merge PART.json PART.json ... [--json FILE] [--report FILE.html] [--threshold EXPR]...

          --json FILE          write the merged result (the same keys as herald-load fleet --json, and
                               merged_segments).
          --report FILE.html   write the merged run's HTML report.
          --threshold EXPR     a pass/fail criterion on the merged run, as herald-load fleet takes it; repeatable.
          --allow-errors       exit 0 even when requests failed.

        Exit status: 0 when every request succeeded and every threshold held, 1 when a request failed (unless
        --allow-errors), a threshold failed or a file could not be written, 2 a bad command line, a file that
        is not a herald-load segment result, parts of different fleets, or a segment given twice.
        """

    static func main(_ arguments: [String]) -> Int32 {
        var files: [String] = []
        var jsonPath: String?, reportPath: String?
        var thresholds: [Threshold] = []
        var allowErrors = false
        var cursor = ArgumentCursor(arguments)
        do throws(FleetOptions.Problem) {
            while cursor.next() {
                switch cursor.name {
                case "--help", "-h":
                    print(usage)
                    return 0
                case "--json": jsonPath = try FleetOptions.path(cursor.name, try cursor.value())
                case "--report": reportPath = try FleetOptions.path(cursor.name, try cursor.value())
                case "--threshold": thresholds.append(try Threshold(parsing: try cursor.value()))
                case "--allow-errors":
                    try cursor.flag()
                    allowErrors = true
                case let name where name.hasPrefix("-") && name.count > 1:
                    throw FleetOptions.Problem("unknown option \(cursor.argument) (see herald-load merge --help)")
                default:
                    files.append(cursor.argument)
                }
            }
            guard !files.isEmpty else { throw FleetOptions.Problem("the parts' result files are needed (PART.json PART.json …)") }
            for path in [jsonPath, reportPath].compactMap({ $0 }) {
                if let problem = FleetCommand.unwritable(path) { throw FleetOptions.Problem(problem) }
            }
        } catch {
            return fail(error.description)
        }
        var merged: ResultMerge.Merged
        do throws(ResultFile.Problem) {
            var parts: [(name: String, result: FleetResult)] = []
            for file in files { parts.append((file, try ResultFile.read(file))) }
            merged = try ResultMerge.merge(parts)
        } catch {
            return fail(error.description)
        }
        merged.result.options.allowErrors = allowErrors
        let result = merged.result
        print(SummaryTable.render(result))
        print("merged: segments \(result.mergedSegments.joined(separator: ", ")) of \(files.count == 1 ? "one file" : "\(files.count) files")"
            + (merged.missing.isEmpty ? "" : "; missing \(merged.missing.joined(separator: ", ")): this is not the whole fleet"))
        return FleetCommand.conclude(result, thresholds: thresholds, jsonPath: jsonPath, reportPath: reportPath, command: "merge")
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("herald-load merge: \(message)\n".utf8))
        return 2
    }
}
