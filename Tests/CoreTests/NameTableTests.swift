import Testing
import Core

@Suite struct NameTableTests {
    /// Every name put in is found with its value, names left out are not (however close), and a
    /// repeated name keeps its first value.
    @Test func findsEveryNameItHoldsAndNoOther() {
        let names = (0..<1_000).map { "/json/1.3/method\($0)" }
        let table = NameTable(names.enumerated().map { ($1, $0) } + [("/json/1.3/method7", -1)])
        #expect(table.count == 1_000)
        for (index, name) in names.enumerated() { #expect(table[name] == index) }
        for index in 1_000..<2_000 { #expect(table["/json/1.3/method\(index)"] == nil) }
        #expect(table["/json/1.3/Method7"] == nil && table[""] == nil && table["/json/1.3/method7 "] == nil)
        #expect(Set(table.entries.map(\.name)) == Set(names) && table.entries.count == 1_000)
        #expect(table.name(of: 7) == "/json/1.3/method7" && table.name(of: 999) == "/json/1.3/method999")
        #expect(table.name(of: -1) == nil && table.name(of: 1_000) == nil)
    }

    @Test func anEmptyTableFindsNothing() {
        let table = NameTable<Int>([])
        #expect(table.count == 0 && table["anything"] == nil && table.entries.isEmpty && table.name(of: 0) == nil)
    }
}
