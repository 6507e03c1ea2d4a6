package bidder;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.text.DecimalFormat;
import java.text.NumberFormat;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An RTB bidder on the JDK's HttpServer (field notes §1): GET /bid?seg=N&ua=... answers a bid.
 *
 * <p>CAUSES (comma-separated, naive mode only) plants one cause at a time or several:
 * rollover (the logging config: logback's synchronous RollingFileAppender gzip-compressing
 * on rollover under the appender lock; chosen in start.sh), regex (the user-agent pattern
 * compiled per request), formatter (date and price formatters built per bid item), scan (the
 * campaign query reads the whole table and sorts it, without an index or a limit, and the bid
 * answers with every row it returned; the table grows by CAMPAIGN_GROWTH rows a second from the first bid on),
 * syncaudit (every bid reported to the audit service at AUDIT_PORT synchronously: ~40 ms of waiting).
 */
public final class Bidder {
    private static final Logger BID_LOG = LoggerFactory.getLogger("bidder.bids");

    static final String UA_PATTERN =
            "^(?<product>[A-Za-z]+)/(?<major>\\d+)\\.(?<minor>\\d+)(?:\\.\\d+)*\\s+\\((?<platform>[^;)]+)(?:;\\s*(?<detail>[^)]*))?\\)"
                    + "(?:\\s+(?<engine>(?:AppleWebKit|Gecko|Blink)/[\\d.]+))?(?:\\s+\\((?<engineDetail>[^)]*)\\))?"
                    + "(?:\\s+(?<browser>(?:Chrome|Firefox|Safari|Edg|OPR)/[\\d.]+))*";
    private static final Pattern UA = Pattern.compile(UA_PATTERN);
    /**
     * Bot signatures checked on every bid request (a real bidder's list runs to hundreds): 24,
     * so that compiling them per request (the cause regex) costs about what each other cause
     * does when all five are stacked (with 12 it held 2.5-2.9% of the request threads' samples
     * beside the audit call's client, under the rule's 3%, 2026-11-25).
     */
    static final List<String> BOT_SIGNATURES = List.of(
            "(?i)\\b(googlebot|bingbot|yandex(bot|images)|baiduspider|duckduckbot)\\b",
            "(?i)(crawler|spider|scraper|fetcher)[-_ /]?v?\\d*(\\.\\d+)*",
            "(?i)^(curl|wget|python-requests|python-urllib|go-http-client|java)/[\\d.]+",
            "(?i)headless(chrome|firefox)?/?[\\d.]*",
            "(?i)\\b(phantomjs|selenium|puppeteer|playwright)\\b.*",
            "(?i)(facebookexternalhit|twitterbot|slackbot|discordbot|linkedinbot)(/[\\d.]+)?",
            "(?i)\\((?:compatible|x11|windows nt [\\d.]+);?\\s*(?:[a-z]+bot|monitor|checker)[^)]*\\)",
            "(?i)^mozilla/[45]\\.0 \\(compatible; (?:ahrefs|semrush|mj12|dot)bot/[\\d.]+;",
            "(?i)\\b(uptimerobot|pingdom|statuscake|site24x7|newrelicpinger)\\b",
            "(?i)(apache-httpclient|okhttp|axios|node-fetch|undici)/[\\d.]+",
            "(?i)\\b(?:ia_archiver|archive\\.org_bot|heritrix)\\b",
            "(?i)^(?:[a-z0-9_-]+)(?:/[0-9a-z._-]+)?\\s*\\(\\+?https?://[^)]+\\)$",
            "(?i)\\b(applebot|petalbot|bytespider|amazonbot|gptbot|ccbot|claudebot)\\b",
            "(?i)(?:google|bing|yahoo)(?:-| )?(?:adsbot|mediapartners|read-aloud)(?:-[a-z]+)?",
            "(?i)\\b(?:lighthouse|pagespeed|gtmetrix|webpagetest|chrome-lighthouse)\\b",
            "(?i)^(?:dalvik|cfnetwork|okhttp)/[\\d.]+ \\((?:linux|darwin)[^)]*\\)$",
            "(?i)\\b(?:feedfetcher|feedly|inoreader|newsblur|tiny tiny rss)\\b",
            "(?i)(?:scrapy|colly|httrack|wget|libwww-perl|lwp-trivial)(?:/[\\d.]+)?",
            "(?i)\\b(?:zgrab|masscan|nmap|nikto|sqlmap|nuclei)\\b",
            "(?i)^(?:php|ruby|perl|rust|reqwest|hyper)(?:/[\\d.]+)?$",
            "(?i)\\((?:[^)]*;)?\\s*(?:spider|crawl|index|archive)(?:er|ing)?[^)]*\\)",
            "(?i)\\b(?:semrush|ahrefs|majestic|mj12|dotbot|blexbot|seokicks)(?:bot)?\\b",
            "(?i)\\b(?:whatsapp|telegrambot|viber|skypeuripreview|pinterestbot)\\b",
            "(?i)^mozilla/5\\.0 \\(x11; linux x86_64\\) applewebkit/[\\d.]+ \\(khtml, like gecko\\) headless");
    private static final List<Pattern> BOTS = BOT_SIGNATURES.stream().map(Pattern::compile).toList();
    private static final DateTimeFormatter STAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", Locale.US);
    private static final ThreadLocal<DecimalFormat> PRICE =
            ThreadLocal.withInitial(() -> new DecimalFormat("#,##0.0000"));
    private static final ThreadLocal<NumberFormat> BUDGET =
            ThreadLocal.withInitial(() -> NumberFormat.getCurrencyInstance(Locale.US));
    private static final ThreadLocal<DecimalFormat> CPM =
            ThreadLocal.withInitial(() -> new DecimalFormat("#,##0.00' CPM'"));

    private static final int BIDS_PER_RESPONSE = 24;
    private final Set<String> causes;
    private final CampaignTable campaigns;
    private final BufferedWriter accessLog;

    private Bidder(Set<String> causes, CampaignTable campaigns, BufferedWriter accessLog) {
        this.causes = causes;
        this.campaigns = campaigns;
        this.accessLog = accessLog;
    }

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(args[0]);
        String mode = System.getenv().getOrDefault("MODE", "naive");
        Set<String> causes = new HashSet<>();
        if (mode.equals("naive")) {
            for (String c : System.getenv().getOrDefault("CAUSES", "").split(",")) {
                if (!c.isBlank()) {
                    causes.add(c.trim());
                }
            }
        }
        Set<String> known = Set.of("rollover", "regex", "formatter", "scan", "syncaudit");
        for (String c : causes) {
            if (!known.contains(c)) {
                System.err.println("java-bidder: unknown cause " + c + " (known: " + known + ")");
                System.exit(2);
            }
        }
        int rows = Integer.parseInt(System.getenv().getOrDefault("CAMPAIGNS", "5000"));
        int growth = Integer.parseInt(System.getenv().getOrDefault("CAMPAIGN_GROWTH", "1000"));
        CampaignTable table = new CampaignTable(rows, growth);
        String logPath = System.getenv().getOrDefault("ACCESS_LOG", "/tmp/keisoku-corpus/java-bidder.log");
        BufferedWriter access = new BufferedWriter(new FileWriter(logPath, StandardCharsets.UTF_8, true));
        Bidder bidder = new Bidder(causes, table, access);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
        server.createContext("/", bidder::handle);
        int threads = Integer.parseInt(System.getenv().getOrDefault("WORKERS", "16"));
        server.setExecutor(Executors.newFixedThreadPool(threads));
        server.start();
        System.out.println("java-bidder listening on " + port);
        System.out.flush();
    }

    private void handle(HttpExchange ex) throws IOException {
        long start = System.nanoTime();
        String query = ex.getRequestURI().getRawQuery();
        int segment = 7;
        String ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
        if (query != null) {
            for (String kv : query.split("&")) {
                if (kv.startsWith("seg=")) {
                    try {
                        segment = Integer.parseInt(kv.substring(4));
                    } catch (NumberFormatException e) {
                        segment = 7;
                    }
                }
            }
        }
        byte[] body = bid(segment, ua).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
        double secs = (System.nanoTime() - start) / 1e9;
        String line = "time:" + ZonedDateTime.now(ZoneOffset.UTC).format(STAMP) + "\tmethod:GET\turi:"
                + ex.getRequestURI().getPath() + "\tstatus:200\tsize:" + body.length + "\treqtime:"
                + String.format(Locale.ROOT, "%.6f", secs) + "\n";
        synchronized (accessLog) {
            accessLog.write(line);
            accessLog.flush();
        }
    }

    String bid(int segment, String userAgent) {
        Pattern ua = causes.contains("regex") ? Pattern.compile(UA_PATTERN) : UA;
        Matcher m = ua.matcher(userAgent);
        String platform = m.find() ? m.group("platform") : "unknown";
        if (isKnownBot(userAgent)) {
            return "{\"nobid\":\"bot\"}";
        }
        if (causes.contains("syncaudit")) {
            postAudit(segment, platform);
        }
        campaigns.startGrowing();
        List<CampaignTable.Campaign> top = causes.contains("scan")
                ? campaigns.selectBySegmentUnbounded(segment)
                : campaigns.topForSegment(segment);
        StringBuilder sb = new StringBuilder(1024);
        sb.append("{\"segment\":").append(segment).append(",\"platform\":\"").append(platform).append("\",\"bids\":[");
        ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
        // The cause scan answers with every row the query returned (no LIMIT): the response
        // follows the table, which grows while the bidder runs.
        int shown = causes.contains("scan") ? top.size() : Math.min(BIDS_PER_RESPONSE, top.size());
        String logged = null;
        for (int i = 0; i < shown; i++) {
            if (i == BIDS_PER_RESPONSE) {
                logged = sb + "]}";
            }
            CampaignTable.Campaign c = top.get(i);
            if (i > 0) {
                sb.append(',');
            }
            if (i >= BIDS_PER_RESPONSE) {
                // The rows past the bids the exchange takes, as the query returned them: the
                // cost of an unbounded answer is its size, not a formatter (so the causes
                // formatter and scan stay apart when stacked).
                sb.append("{\"campaign\":").append(c.id()).append(",\"price\":").append(c.price()).append('}');
                continue;
            }
            DateTimeFormatter stamp = causes.contains("formatter")
                    ? DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", Locale.US)
                    : STAMP;
            DecimalFormat price = causes.contains("formatter") ? new DecimalFormat("#,##0.0000") : PRICE.get();
            DecimalFormat cpm = causes.contains("formatter") ? new DecimalFormat("#,##0.00' CPM'") : CPM.get();
            NumberFormat budget = causes.contains("formatter") ? NumberFormat.getCurrencyInstance(Locale.US) : BUDGET.get();
            sb.append("{\"campaign\":").append(c.id()).append(",\"price\":\"").append(price.format(c.price()))
                    .append("\",\"cpm\":\"").append(cpm.format(c.price() * 1000.0))
                    .append("\",\"budget\":\"").append(budget.format(c.price() * 250_000.0))
                    .append("\",\"at\":\"").append(stamp.format(now.plusNanos(i))).append("\"}");
        }
        sb.append("]}");
        String response = sb.toString();
        // Every bid is logged (the bid log is what the ad ops read): ~2 kB a request, its first
        // BIDS_PER_RESPONSE bids whatever the response holds, so the log is sized as in tuned mode.
        BID_LOG.info("bid seg={} ua={} platform={} response={} trace={}", segment, userAgent, platform,
                logged == null ? response : logged,
                Long.toHexString(Double.doubleToLongBits(Math.random())) + Long.toHexString(System.nanoTime()));
        return response;
    }

    /** The audit service (AUDIT_PORT), which answers after ~40 ms: an external call. */
    private static final String AUDIT_URL =
            "http://127.0.0.1:" + System.getenv().getOrDefault("AUDIT_PORT", "0") + "/audit";

    /**
     * The cause syncaudit: every bid is reported to the audit service synchronously, so the
     * request thread waits for its answer (HttpURLConnection keeps the connection alive).
     */
    private static void postAudit(int segment, String platform) {
        try {
            java.net.HttpURLConnection c =
                    (java.net.HttpURLConnection) java.net.URI.create(AUDIT_URL).toURL().openConnection();
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            byte[] body = ("{\"segment\":" + segment + ",\"platform\":\"" + platform + "\"}")
                    .getBytes(StandardCharsets.UTF_8);
            try (OutputStream os = c.getOutputStream()) {
                os.write(body);
            }
            try (java.io.InputStream in = c.getInputStream()) {
                in.readAllBytes();
            }
        } catch (IOException e) {
            // An audit that failed is not a failed bid; the bid goes out.
        }
    }

    private boolean isKnownBot(String userAgent) {
        if (causes.contains("regex")) {
            // The cause: every signature compiled again for every request.
            for (String sig : BOT_SIGNATURES) {
                if (Pattern.compile(sig).matcher(userAgent).find()) {
                    return true;
                }
            }
            return false;
        }
        for (Pattern p : BOTS) {
            if (p.matcher(userAgent).find()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The campaign store: an in-memory table, with an index the tuned path uses. New campaigns
     * arrive while the bidder runs (GROWTH rows a second, the ad ops' sync), as in a real table.
     */
    static final class CampaignTable {
        record Campaign(int id, int segment, double price, String advertiser) {}

        private final java.util.Random random = new java.util.Random(42);
        /** Rows [0, size): the writer publishes a larger array before the size that needs it. */
        private volatile Campaign[] rows;
        private volatile int size;
        /** Per segment its BIDS_PER_RESPONSE best rows, replaced whole by the writer. */
        private volatile List<List<Campaign>> topBySegment;

        CampaignTable(int n, int growthPerSecond) {
            rows = new Campaign[Math.max(16, n * 2)];
            append(n);
            this.growthPerSecond = growthPerSecond;
        }

        private final int growthPerSecond;
        private final java.util.concurrent.atomic.AtomicBoolean growing =
                new java.util.concurrent.atomic.AtomicBoolean();

        /**
         * Starts the sync with the first bid, so the table's growth is measured from the traffic's
         * start however long the JVM took to start on a crowded host.
         */
        void startGrowing() {
            if (growthPerSecond > 0 && growing.compareAndSet(false, true)) {
                Thread sync = new Thread(() -> {
                    while (true) {
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                        append(Math.max(1, growthPerSecond / 10));
                    }
                }, "campaign-sync");
                sync.setDaemon(true);
                sync.start();
            }
        }

        /** Only the sync thread (and the constructor before it) appends. */
        private void append(int n) {
            Campaign[] a = rows;
            int s = size;
            if (s + n > a.length) {
                a = Arrays.copyOf(a, Math.max(a.length * 2, s + n));
                rows = a;
            }
            for (int i = 0; i < n; i++) {
                a[s + i] = new Campaign(s + i, random.nextInt(64), random.nextDouble() * 3.0,
                        "adv-" + random.nextInt(5000));
            }
            size = s + n;
            List<List<Campaign>> top = new ArrayList<>();
            for (int seg = 0; seg < 64; seg++) {
                List<Campaign> best = new ArrayList<>(topBySegment == null ? List.of() : topBySegment.get(seg));
                for (int i = s; i < s + n; i++) {
                    if (a[i].segment() == seg) {
                        best.add(a[i]);
                    }
                }
                best.sort((x, y) -> Double.compare(y.price(), x.price()));
                top.add(List.copyOf(best.subList(0, Math.min(BIDS_PER_RESPONSE, best.size()))));
            }
            topBySegment = top;
        }

        /** SELECT * FROM campaigns WHERE segment = ? ORDER BY price DESC: no index, no LIMIT. */
        List<Campaign> selectBySegmentUnbounded(int segment) {
            int n = size;
            Campaign[] a = rows;
            List<Campaign> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Campaign c = a[i];
                if (c.segment() == Math.floorMod(segment, 64) || c.advertiser().hashCode() % 997 == segment) {
                    out.add(c);
                }
            }
            Campaign[] sorted = out.toArray(new Campaign[0]);
            Arrays.sort(sorted, (x, y) -> Double.compare(y.price(), x.price()));
            return Arrays.asList(sorted);
        }

        List<Campaign> topForSegment(int segment) {
            return topBySegment.get(Math.floorMod(segment, 64));
        }
    }
}
