/// The values real installs send, with rough real-world weights: languages, time zones, device
/// models, OS and app versions, screens and custom events. A device picks from them by its hash.
enum DeviceCatalog {
    /// A table of values with integer weights; `pick` maps a hash onto it.
    struct Weighted<Value: Sendable>: Sendable {
        let values: [Value]
        let cumulative: [UInt64]

        init(_ entries: [(Value, UInt64)]) {
            values = entries.map(\.0)
            var sum: UInt64 = 0
            cumulative = entries.map { sum += $0.1; return sum }
        }

        func pick(_ hash: UInt64) -> Int {
            let total = cumulative[cumulative.count - 1]
            let point = hash % total
            var index = 0
            while cumulative[index] <= point { index += 1 }
            return index
        }

        subscript(_ index: Int) -> Value { values[index] }
    }

    /// Language codes as the SDKs send them (iOS may send a script subtag such as `zh-Hans`).
    static let languages = Weighted<(ios: StaticString, android: StaticString)>([
        (("en", "en"), 30), (("es", "es"), 10), (("pt", "pt"), 7), (("de", "de"), 6), (("fr", "fr"), 6),
        (("ru", "ru"), 5), (("zh-Hans", "zh"), 5), (("ja", "ja"), 4), (("it", "it"), 4), (("ko", "ko"), 3),
        (("tr", "tr"), 3), (("ar", "ar"), 3), (("hi", "hi"), 3), (("id", "id"), 3), (("nl", "nl"), 2),
        (("pl", "pl"), 2), (("vi", "vi"), 2), (("uk", "uk"), 1), (("th", "th"), 1),
    ])

    /// UTC offsets in seconds, including the half- and quarter-hour zones.
    static let timezones = Weighted<Int64>([
        (-28_800, 8), (-25_200, 3), (-21_600, 5), (-18_000, 10), (-14_400, 2), (-10_800, 7), (0, 6), (3_600, 14),
        (7_200, 6), (10_800, 7), (14_400, 2), (19_800, 9), (20_700, 1), (25_200, 4), (28_800, 8), (32_400, 5),
        (34_200, 1), (36_000, 2),
    ])

    static let iosModels = Weighted<StaticString>([
        ("iPhone16,2", 9), ("iPhone16,1", 8), ("iPhone15,2", 9), ("iPhone15,3", 7), ("iPhone14,7", 10), ("iPhone14,5", 12),
        ("iPhone13,2", 10), ("iPhone12,1", 8), ("iPhone17,1", 5), ("iPhone17,3", 5), ("iPad13,4", 3), ("iPad14,1", 2),
    ])
    static let iosVersions = Weighted<StaticString>([
        ("18.3.2", 20), ("18.1", 12), ("17.6.1", 18), ("17.4", 10), ("16.7.8", 9), ("15.8.3", 4), ("18.4", 8),
    ])
    static let androidModels = Weighted<StaticString>([
        ("SM-S911B", 9), ("SM-A546B", 11), ("SM-G991B", 7), ("Pixel 8", 6), ("Pixel 7a", 5), ("M2101K6G", 6),
        ("2201117TY", 6), ("CPH2449", 4), ("moto g54 5G", 4), ("V2250", 3), ("SM-X200", 2),
    ])
    /// The index of the tablet among `androidModels`.
    static let androidTabletModel = 10
    static let androidVersions = Weighted<StaticString>([
        ("14", 35), ("13", 22), ("15", 14), ("12", 12), ("11", 10), ("10", 7),
    ])
    /// Browsers as the Web SDK names them in `device_model`, and the systems they run on.
    static let chromeVersions = Weighted<StaticString>([("Chrome 131.0", 40), ("Chrome 130.0", 25), ("Chrome 129.0", 10)])
    static let firefoxVersions = Weighted<StaticString>([("Firefox 133.0", 20), ("Firefox 132.0", 10), ("Firefox 128.0", 5)])
    static let desktopSystems = Weighted<StaticString>([("Windows 10", 45), ("Windows 11", 20), ("Mac OS X 10.15", 20), ("Linux", 5), ("Android 14", 10)])

    /// The app's own versions in the wild: most devices on the last two releases.
    static let appVersions = Weighted<StaticString>([
        ("3.4.1", 40), ("3.4.0", 25), ("3.3.2", 20), ("3.2.0", 10), ("2.9.7", 5),
    ])

    /// iOS screens as the SDK names them (`Parent/Child` view controllers), Android activities.
    static let iosScreens: [StaticString] = [
        "UINavigationController/HomeViewController", "UINavigationController/CatalogViewController",
        "UINavigationController/ProductViewController", "UITabBarController/SearchViewController",
        "UINavigationController/CartViewController", "UITabBarController/ProfileViewController",
        "UINavigationController/CheckoutViewController", "SettingsViewController",
    ]
    static let androidScreens: [StaticString] = [
        "com.example.shop.MainActivity", "com.example.shop.CatalogActivity", "com.example.shop.ProductActivity",
        "com.example.shop.SearchActivity", "com.example.shop.CartActivity", "com.example.shop.ProfileActivity",
        "com.example.shop.CheckoutActivity", "com.example.shop.SettingsActivity",
    ]
    /// A shop's pages, the screens a browser session visits.
    static let webPages: [StaticString] = [
        "/", "/catalog", "/product", "/search", "/cart", "/account", "/checkout", "/settings",
    ]

    static let cities: [StaticString] = [
        "London", "Paris", "Berlin", "Madrid", "New York", "São Paulo", "Tokyo", "Mumbai", "Sydney", "Toronto",
        "Istanbul", "Seoul", "Mexico City", "Warsaw", "Jakarta", "Lyon",
    ]
    static let plans: [StaticString] = ["free", "free", "free", "plus", "plus", "pro"]
    static let interests: [StaticString] = ["sports", "music", "news", "travel", "food", "tech", "fashion", "games"]
    static let categories: [StaticString] = ["shoes", "books", "electronics", "toys", "garden", "beauty"]
    static let searches: [StaticString] = ["running shoes", "headphones", "gift", "lego", "coffee maker", "sale"]
    static let currencies: [StaticString] = ["USD", "EUR", "GBP", "BRL", "JPY", "INR"]
    static let products: [StaticString] = ["coins_100", "coins_500", "premium_month", "premium_year"]

    /// The custom events sessions send, by name.
    static let customEvents: [StaticString] = ["ProductViewed", "AddToCart", "Search", "Checkout"]
}
