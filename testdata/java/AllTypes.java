// AllTypes records custom JFR events that use every field type and content
// type a Java event can declare, across several chunks. flightrec's tests
// compare `flightrec print --json` and `summary` on its recordings with jfr's.
//
//   javac -d classes AllTypes.java
//   java -XX:StartFlightRecording=filename=out.jfr,settings=profile \
//        -XX:FlightRecorderOptions=maxchunksize=1M -cp classes AllTypes
import jdk.jfr.*;

public class AllTypes {
    @Name("test.AllTypes")
    @Label("All Types")
    @Description("Every field type and content type")
    @Category({"Test", "Types"})
    @StackTrace(true)
    static class AllTypesEvent extends Event {
        @Label("Flag") boolean flag;
        @Label("Small") byte small;
        @Label("Short") short shortValue;
        @Label("Letter") char letter;
        @Label("Int") int intValue;
        @Label("Long") long longValue;
        @Label("Float") float floatValue;
        @Label("Double") double doubleValue;
        @Label("Text") String text;
        @Label("Thread") Thread thread;
        @Label("Class") Class<?> clazz;
        @DataAmount(DataAmount.BYTES) long bytes;
        @DataAmount(DataAmount.BITS) long bits;
        @Timespan(Timespan.NANOSECONDS) long nanos;
        @Timespan(Timespan.MICROSECONDS) long micros;
        @Timespan(Timespan.MILLISECONDS) long millis;
        @Timespan(Timespan.SECONDS) long seconds;
        @Timespan(Timespan.TICKS) long spanTicks;
        @Timestamp(Timestamp.MILLISECONDS_SINCE_EPOCH) long epochMillis;
        @Timestamp(Timestamp.TICKS) long stampTicks;
        @Percentage double ratio;
        @Percentage float ratioFloat;
        @Frequency long hertz;
        @MemoryAddress long address;
        @Unsigned int unsignedInt;
        @Unsigned long unsignedLong;
        @Unsigned short unsignedShort;
        @Unsigned byte unsignedByte;
    }

    @Name("test.Instant")
    @Label("Instant")
    static class InstantEvent extends Event {
        @Label("Message") String message;
        @Label("Count") int count;
    }

    static final String[] TEXTS = {
        null, "", "a", "plain ascii", "slash/and\\backslash \"quoted\"",
        "tab\tnewline\ncr\r", "control\u0001\u001f", "latin é ü ß", "greek αβγ", "emoji 😀 surrogate pair",
        "a string long enough to be pooled by the JVM", "</script>", "unicode \u2028 line sep",
    };
    static final double[] DOUBLES = {
        0.0, -0.0, 1.0, -1.5, 0.1, 1e-7, 123456789.125, 1e21, 3.0e-300, Double.MAX_VALUE,
        Double.MIN_VALUE, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.25,
    };
    static final long[] LONGS = {
        0, 1, -1, 127, 128, 1023, 1024, 1025, 1_000_000, Long.MAX_VALUE, Long.MIN_VALUE, 4096L * 1024 * 1024,
        999_999, 1_500_000_000L, 86_400_000_000_000L, -5,
    };

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 30000;
        // Pause 20 ms every sleepEvery iterations, so the recording spans
        // some time and several JVM periodic events.
        int sleepEvery = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        long base = System.currentTimeMillis();
        for (int i = 0; i < n; i++) {
            AllTypesEvent e = new AllTypesEvent();
            e.begin();
            long l = LONGS[i % LONGS.length];
            double d = DOUBLES[i % DOUBLES.length];
            e.flag = i % 2 == 0;
            e.small = (byte) (i * 7);
            e.shortValue = (short) (i * 131);
            e.letter = "aZ0 é\u00ff\u4e2d\"\\/\n".charAt(i % 11);
            e.intValue = (int) l;
            e.longValue = l;
            e.floatValue = (float) d;
            e.doubleValue = d;
            e.text = TEXTS[i % TEXTS.length];
            e.thread = i % 3 == 0 ? null : Thread.currentThread();
            e.clazz = i % 4 == 0 ? null : (i % 4 == 1 ? String.class : AllTypes.class);
            e.bytes = Math.abs(l);
            e.bits = Math.abs(l);
            e.nanos = l;
            e.micros = l;
            e.millis = l;
            e.seconds = l % 100000;
            e.spanTicks = Math.abs(l % 10_000_000);
            e.epochMillis = base + i;
            e.stampTicks = i % 5 == 0 ? 0 : System.nanoTime();
            e.ratio = d;
            e.ratioFloat = (float) (i % 100) / 100f;
            e.hertz = Math.abs(l);
            e.address = l;
            e.unsignedInt = (int) l;
            e.unsignedLong = l;
            e.unsignedShort = (short) l;
            e.unsignedByte = (byte) l;
            e.commit();
            InstantEvent ie = new InstantEvent();
            ie.message = "message " + i;
            ie.count = i;
            ie.commit();
            if (i % sleepEvery == 0) {
                Thread.sleep(20);
            }
        }
    }
}
