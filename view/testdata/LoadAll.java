// The peer of BenchmarkIndex: the JDK's own in-memory load of a recording
// (RecordingFile.readAllEvents, what JMC's parser approximates). Prints the
// events, the load time in ns and the heap in use after a GC, in bytes.
import java.nio.file.Path;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

public class LoadAll {
    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        List<RecordedEvent> events = RecordingFile.readAllEvents(Path.of(args[0]));
        long t1 = System.nanoTime();
        System.gc();
        Runtime rt = Runtime.getRuntime();
        long used = rt.totalMemory() - rt.freeMemory();
        System.out.println(events.size() + " " + (t1 - t0) + " " + used);
    }
}
