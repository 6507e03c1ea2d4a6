# A DSP bid server on Starman (prefork), field notes §2: GET /bid?seg=N scores every campaign
# of the segment in pure Perl (CPU-bound, ~2-4 ms a request) and answers the best bid.
#
# CAUSES (MODE=naive only): oversubscribed  4 workers per core, none pinned: they migrate
# between cores and preempt each other. MODE=tuned: one worker per core, each pinned to its
# own core with sched_setaffinity (field notes §2's fix) -- start.sh chooses the worker count.
use strict;
use warnings;
use Fcntl qw(:flock O_RDWR O_CREAT);
use Time::HiRes qw(time);
use POSIX qw(strftime);

my $MODE = $ENV{MODE} // 'naive';
my $PIN = $MODE eq 'tuned';
my $ACCESS_LOG = $ENV{ACCESS_LOG} // '/dev/null';
my $PIN_COUNTER = $ENV{PIN_COUNTER} // "/tmp/keisoku-corpus/perl-dsp-pins.$$";
my $SYS_sched_setaffinity = 203;    # x86_64

my @CAMPAIGNS = map {
    { id => $_, segment => $_ % 32, base => 0.5 + ($_ * 7919 % 1000) / 400, weights => [ map { ($_ * 31 + $_) % 17 / 17 } 1 .. 12 ] }
} 1 .. 6000;
my %BY_SEGMENT;
push @{ $BY_SEGMENT{ $_->{segment} } }, $_ for @CAMPAIGNS;

my ($log_fh, $pinned);

# Pins this worker to the next core: a counter file shared by the workers hands out cores in turn.
sub pin_to_next_core {
    sysopen(my $fh, $PIN_COUNTER, O_RDWR | O_CREAT) or die "perl-dsp: $PIN_COUNTER: $!";
    flock($fh, LOCK_EX) or die "perl-dsp: flock: $!";
    my $n = <$fh> // 0;
    chomp $n;
    seek($fh, 0, 0);
    truncate($fh, 0);
    print {$fh} ($n + 1), "\n";
    close $fh;
    my $cores = `nproc` + 0 || 1;
    my $cpu = $n % $cores;
    my $mask = pack('Q', 1 << $cpu);
    syscall($SYS_sched_setaffinity, 0, length($mask), $mask) == 0
        or die "perl-dsp: sched_setaffinity: $!";
}

sub score_segment {
    my ($seg, $floor) = @_;
    my ($best, $best_score) = (undef, -1);
    for my $c (@{ $BY_SEGMENT{$seg} || [] }) {
        my $s = $c->{base};
        my $i = 0;
        for my $w (@{ $c->{weights} }) {
            $s += $w * (($seg + $i++) % 5) / 7;
        }
        $s = $s * 1.07 - $floor;
        ($best, $best_score) = ($c, $s) if $s > $best_score;
    }
    return ($best, $best_score);
}

my $app = sub {
    my $env = shift;
    my $t0 = time;
    if ($PIN && !$pinned) {
        pin_to_next_core();
        $pinned = 1;
    }
    unless ($log_fh) {
        open($log_fh, '>>', $ACCESS_LOG) or die "perl-dsp: $ACCESS_LOG: $!";
        $log_fh->autoflush(1);
    }
    my ($seg) = ($env->{QUERY_STRING} // '') =~ /seg=(\d+)/;
    $seg = ($seg // 7) % 32;
    my $total = 0;
    my ($best, $score);
    for my $round (1 .. 2) {
        ($best, $score) = score_segment(($seg + $round) % 32, 0.1 * $round);
        $total += $score;
    }
    my $body = sprintf('{"campaign":%d,"price":%.4f}', $best->{id}, $total / 2);
    printf {$log_fh} "time:%s\tmethod:GET\turi:%s\tstatus:200\tsize:%d\treqtime:%.6f\n",
        strftime('%Y-%m-%dT%H:%M:%SZ', gmtime), $env->{PATH_INFO}, length($body), time - $t0;
    return [ 200, [ 'Content-Type' => 'application/json', 'Content-Length' => length($body) ], [$body] ];
};
$app;
