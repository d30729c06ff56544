// JmcRules runs JDK Mission Control's automated analysis (every rule JMC
// core registers) on recordings and prints, per file, the rules that give
// a result as JMC's JfrRulesReport -min ok counts them (OK, Information,
// Warning or Ignore; not N/A): severity, score, id and name, then the
// count. --all prints the rules without a result too, marked N/A.
// Run it through scripts/jmc-rules, which puts JMC core on the class path.

import java.io.File;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import org.openjdk.jmc.common.IDisplayable;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.unit.IQuantity;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;
import org.openjdk.jmc.flightrecorder.rules.IResult;
import org.openjdk.jmc.flightrecorder.rules.IRule;
import org.openjdk.jmc.flightrecorder.rules.RuleRegistry;
import org.openjdk.jmc.flightrecorder.rules.Severity;
import org.openjdk.jmc.flightrecorder.rules.TypedResult;
import org.openjdk.jmc.flightrecorder.rules.util.RulesToolkit;

public class JmcRules {
	public static void main(String[] args) throws Exception {
		boolean all = false;
		List<String> files = new ArrayList<>();
		for (String a : args) {
			if (a.equals("--all")) {
				all = true;
			} else {
				files.add(a);
			}
		}
		if (files.isEmpty()) {
			System.err.println("usage: jmc-rules [--all] FILE.jfr...");
			System.exit(2);
		}
		int status = 0;
		for (String f : files) {
			IItemCollection events;
			try {
				events = JfrLoaderToolkit.loadEvents(new File(f));
			} catch (Exception e) {
				System.err.println("jmc-rules: " + f + ": " + e);
				status = 1;
				continue;
			}
			List<IRule> rules = new ArrayList<>(RuleRegistry.getRules());
			rules.sort(Comparator.comparing(IRule::getId));
			Map<IRule, Future<IResult>> futures = RulesToolkit.evaluateParallel(rules, events, null, 0);
			int withResult = 0;
			System.out.println("# " + f);
			for (IRule rule : rules) {
				String severity, score = "";
				try {
					IResult r = futures.get(rule).get();
					Severity s = r == null ? Severity.NA : r.getSeverity();
					// Severity's order is NA, OK, INFO, WARNING, IGNORE, as
					// JfrRulesReport compares it.
					if (s.compareTo(Severity.OK) < 0 && !all) {
						continue;
					}
					if (s.compareTo(Severity.OK) >= 0) {
						withResult++;
					}
					severity = s.getLocalizedName();
					IQuantity q = r == null ? null : r.getResult(TypedResult.SCORE);
					if (q != null) {
						score = q.displayUsing(IDisplayable.AUTO);
					}
				} catch (Exception e) {
					severity = "error: " + e.getCause();
				}
				System.out.println(severity + "\t" + score + "\t" + rule.getId() + "\t" + rule.getName());
			}
			System.out.println("rules with a result: " + withResult + " of " + rules.size());
		}
		System.exit(status);
	}
}
